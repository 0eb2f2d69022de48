"""The runtime's C ABI is written in several places by hand; this test reads
them all and fails when one drifts from the others (issue #58's drift
check, until the ABI is generated from one table):

  - the public headers (runtime/include/gradcomm/*.h) against
    libgradcomm_runtime.so's exports: every declared function exported,
    nothing else exported but what runtime/exports.map names for compiled
    code and MPI;
  - the Python binding (gradcomm/runtime.py: `_SIGNATURES` and the
    ctypes structures) against the headers: every bound function
    declared with the same number and kinds of arguments, every structure
    with the C struct's fields, in order, of the same kinds;
  - the compiler's runtime-function table (kRuntimeFns in
    lib/Conversion/GradCommToRuntime/GradCommToRuntime.cpp) against
    runtime_memref.h: every function declared (`_mlir_ciface_` for the
    memref ones) with the table's argument and result kinds;
  - the overlap pass's started forms (kStartedForms in
    OverlapCollectives.cpp): each started form takes its blocking form's
    arguments, and the operand it marks as written is a buffer;
  - libgradcomm_blas (blas/include/gradcomm/blas.h) against its exports
    and the function convert-linalg-to-blas calls.

Parsing is by regular expressions over the project's own, regular, C
style: a declaration the patterns cannot read fails the test rather than
being skipped."""

import ctypes
import os
import re
import subprocess

import pytest

from gradcomm import runtime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
HEADERS = os.path.join(ROOT, "runtime", "include", "gradcomm")
CONVERSION = os.path.join(ROOT, "lib", "Conversion", "GradCommToRuntime",
                          "GradCommToRuntime.cpp")
OVERLAP = os.path.join(ROOT, "lib", "Dialect", "GradComm", "Transforms",
                       "OverlapCollectives.cpp")


def _source(path):
    with open(path) as file:
        text = file.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _headers():
    return {name: _source(os.path.join(HEADERS, name))
            for name in sorted(os.listdir(HEADERS)) if name.endswith(".h")}


def _type_names(texts):
    """{typedef name: "enum" | "struct" | "handle"} of the headers."""
    kinds = {}
    for text in texts:
        # GRADCOMM_ENUM(name): runtime.h's int-sized enum.
        for body_kind, name in re.findall(
                r"typedef\s+(enum|struct|GRADCOMM_ENUM)\s*[\w()]*\s*\{[^}]*\}"
                r"\s*(\w+)\s*;", text, flags=re.S):
            kinds[name] = "enum" if body_kind == "GRADCOMM_ENUM" else body_kind
        for name in re.findall(r"typedef\s+struct\s+\w+\s*\*\s*(\w+)\s*;",
                               text):
            kinds[name] = "handle"
    return kinds


def _kind(c_type, type_names):
    """A C type as a kind both sides can be compared in: "str", "ptr", an
    integer or float width ("i32", "i64", "u64", "f32", "f64"), "void",
    or "ptr:<kind>" for a pointer to a scalar or a struct."""
    c_type = " ".join(c_type.replace("const", " ").split())
    if c_type == "char *":
        return "str"
    if c_type.endswith("*"):
        pointee = c_type[:-1].strip()
        if pointee in ("void", "float", "uint16_t", "char"):
            return "ptr"
        if pointee.endswith("*"):
            return "ptr:ptr"
        return "ptr:" + _kind(pointee, type_names)
    scalars = {"int": "i32", "int32_t": "i32", "int64_t": "i64",
               "uint64_t": "u64", "size_t": "u64", "float": "f32",
               "double": "f64", "void": "void", "uint32_t": "u32"}
    if c_type in scalars:
        return scalars[c_type]
    # Types of other libraries in runtime_mpi.h and runtime_cuda.h.
    if c_type in ("MPI_Comm", "cudaStream_t"):
        return c_type
    kind = type_names.get(c_type)
    if kind == "enum":
        return "i32"
    if kind == "handle":
        return "ptr"
    if kind == "struct":
        return "struct:" + c_type
    raise AssertionError("a C type this test cannot read: %r" % c_type)


def _split_parameter(parameter):
    """The type of one C parameter (its name dropped; an array parameter,
    `T name[N]`, is the pointer it is)."""
    parameter = " ".join(parameter.split())
    array = re.match(r"^(.*\S)\s+\w+\s*\[\w*\]$", parameter)
    if array:
        return array.group(1) + " *"
    match = re.match(r"^(.*?[\s*])(\w+)$", parameter)
    if match and match.group(1).strip() and \
            match.group(2) not in ("int", "float", "double", "char", "void"):
        return match.group(1).strip()
    return parameter


def _prototypes(text, type_names, pattern=r"(?:_mlir_ciface_)?gradcomm_\w+"):
    """{function name: (result kind, [argument kinds])} declared in
    `text`."""
    found = {}
    for result, name, parameters in re.findall(
            r"([A-Za-z_][\w\s]*?[\s*]+)(%s)\s*\(([^;{}()]*)\)\s*;" % pattern,
            text):
        # The return type is the declaration's last line before its name.
        result = result.strip().split("\n")[-1].strip()
        parameters = parameters.strip()
        arguments = [] if parameters in ("", "void") else [
            _kind(_split_parameter(p), type_names)
            for p in parameters.split(",")]
        found[name] = (_kind(result, type_names), arguments)
    return found


@pytest.fixture(scope="module")
def declared():
    texts = _headers()
    type_names = _type_names(texts.values())
    functions = {}
    for text in texts.values():
        functions.update(_prototypes(text, type_names))
    assert len(functions) > 100, "the headers' declarations were not read"
    return functions, type_names, texts


def _ctypes_kind(ctype):
    if ctype is ctypes.c_char_p:
        return "str"
    if ctype is ctypes.c_void_p:
        return "ptr"
    sizes = {ctypes.c_int: "i32", ctypes.c_int32: "i32",
             ctypes.c_int64: "i64", ctypes.c_uint64: "u64",
             ctypes.c_float: "f32", ctypes.c_double: "f64",
             ctypes.c_size_t: "u64", ctypes.c_uint32: "u32"}
    if ctype in sizes:
        return sizes[ctype]
    if hasattr(ctype, "_type_") and isinstance(ctype, type) and \
            issubclass(ctype, ctypes._Pointer):
        pointee = ctype._type_
        if isinstance(pointee, type) and issubclass(pointee, ctypes.Structure):
            return "ptr:struct:" + pointee.__doc__.split()[0]
        return "ptr:" + _ctypes_kind(pointee)
    if isinstance(ctype, type) and issubclass(ctype, ctypes.Structure):
        return "struct:" + ctype.__doc__.split()[0]
    if isinstance(ctype, type) and issubclass(ctype, ctypes._CFuncPtr):
        return "fnptr"
    raise AssertionError("a ctypes type this test cannot read: %r" % ctype)


def _compatible(python_kind, c_kind):
    # c_void_p passes any pointer (data buffers, handles, void **).
    return python_kind == c_kind or (
        python_kind == "ptr" and c_kind.startswith("ptr"))


def test_python_binding_matches_the_headers(declared):
    functions, _, _ = declared
    drift = []
    for name, argtypes in runtime._SIGNATURES.items():
        if name not in functions:
            drift.append("%s: bound in runtime.py, declared in no header"
                         % name)
            continue
        result, arguments = functions[name]
        python = [_ctypes_kind(t) for t in argtypes]
        if result != "i32":
            drift.append("%s returns %s; runtime.py reads a status"
                         % (name, result))
        if len(python) != len(arguments) or not all(
                _compatible(p, c) for p, c in zip(python, arguments)):
            drift.append("%s: runtime.py %s, header %s"
                         % (name, python, arguments))
    assert not drift, "\n".join(drift)


def _struct_fields(texts, type_names, name):
    for text in texts.values():
        match = re.search(r"typedef\s+struct\s*\w*\s*\{([^}]*)\}\s*%s\s*;"
                          % name, text, flags=re.S)
        if match:
            fields = []
            for declaration in match.group(1).split(";"):
                declaration = " ".join(declaration.split())
                if not declaration:
                    continue
                pointer = re.match(r"^(.*)\(\s*\*\s*(\w+)\s*\)\s*\(.*\)$",
                                   declaration)
                if pointer:  # a function pointer
                    fields.append((pointer.group(2), "fnptr"))
                    continue
                field_type = _split_parameter(declaration)
                fields.append((declaration.split()[-1].lstrip("*"),
                               _kind(field_type, type_names)))
            return fields
    raise AssertionError("struct %s is in no header" % name)


def test_python_structures_match_the_headers(declared):
    _, type_names, texts = declared
    structures = [value for value in vars(runtime).values()
                  if isinstance(value, type) and
                  issubclass(value, ctypes.Structure) and
                  value.__module__ == runtime.__name__]
    assert len(structures) >= 3
    drift = []
    for structure in structures:
        c_name = structure.__doc__.split()[0]
        c_fields = _struct_fields(texts, type_names, c_name)
        python = [(name, _ctypes_kind(ctype))
                  for name, ctype in structure._fields_]
        if python != c_fields:
            drift.append("%s (%s): runtime.py %s, header %s"
                         % (structure.__name__, c_name, python, c_fields))
    assert not drift, "\n".join(drift)


def test_every_declared_function_is_exported(declared):
    functions, _, texts = declared
    library = os.environ.get("GRADCOMM_RUNTIME_LIBRARY") or \
        runtime.runtime_library_candidates()[0]
    if not os.path.exists(library):
        pytest.skip("no libgradcomm_runtime.so built")
    exported = _exported_functions(library)
    missing = sorted(name for name in functions if name not in exported)
    # Nothing beside the ABI: no MPI name either (a wrapped MPI_Finalize
    # would clash with PMPI tools).
    undeclared = sorted(name for name in exported if name not in functions)
    assert not missing, "declared, not exported: " + ", ".join(missing)
    assert not undeclared, "exported, declared in no header: " + \
        ", ".join(undeclared)


def _exported_functions(library):
    """The functions a shared library exports (nm -D's defined text
    symbols)."""
    symbols = subprocess.run(["nm", "-D", "--defined-only", library],
                             check=True, stdout=subprocess.PIPE,
                             text=True).stdout
    return {line.split()[-1] for line in symbols.splitlines()
            if line.split()[-2:-1] == ["T"]}


BLAS_HEADER = os.path.join(ROOT, "blas", "include", "gradcomm", "blas.h")
LINALG_TO_BLAS = os.path.join(ROOT, "lib", "Conversion", "LinalgToBlas",
                              "LinalgToBlas.cpp")


def test_blas_library_matches_its_header_and_the_compiler():
    """libgradcomm_blas (blas/) exports exactly what blas.h declares, and
    the function convert-linalg-to-blas calls is one of them."""
    declared_blas = _prototypes(_source(BLAS_HEADER), {})
    assert declared_blas, "blas.h's declarations were not read"
    called = re.findall(r'kMatmulFunction\s*=\s*"(\w+)"',
                        _source(LINALG_TO_BLAS))
    assert called and "_mlir_ciface_" + called[0] in declared_blas, (
        "convert-linalg-to-blas calls %s, blas.h declares %s"
        % (called, sorted(declared_blas)))
    runtime_library = os.environ.get("GRADCOMM_RUNTIME_LIBRARY") or \
        runtime.runtime_library_candidates()[0]
    library = os.path.join(os.path.dirname(runtime_library),
                           "libgradcomm_blas.so")
    if not os.path.exists(library):
        pytest.skip("no libgradcomm_blas.so beside " + runtime_library)
    exported = _exported_functions(library)
    assert exported == set(declared_blas), (
        "libgradcomm_blas exports %s, blas.h declares %s"
        % (sorted(exported), sorted(declared_blas)))


KIND_OF_TABLE = {"Str": "str", "I32": "i32", "I64": "i64", "F32": "f32",
                 "None": "void", "BufF32": "ptr:struct:memref",
                 "BufBF16": "ptr:struct:memref",
                 "BufF16": "ptr:struct:memref",
                 "BufI64": "ptr:struct:memref"}


def _runtime_function_table():
    text = _source(CONVERSION)
    entries = re.findall(
        r"\{\s*RuntimeFn::(\w+),\s*\"(\w+)\",\s*(true|false),\s*Kind::(\w+),"
        r"\s*\{([^}]*)\}\s*\}", text)
    declared_fns = re.search(r"enum class RuntimeFn\s*\{([^}]*)\}", text)
    count = len([n for n in declared_fns.group(1).split(",") if n.strip()])
    assert len(entries) == count, (
        "kRuntimeFns has %d entries this test reads, RuntimeFn %d values"
        % (len(entries), count))
    return entries


def _memref_kind(kind):
    return "ptr:struct:memref" if kind == "ptr:struct:gradcomm_unranked_memref" \
        else kind


def test_compiler_table_matches_the_memref_header(declared):
    functions, _, _ = declared
    drift = []
    for fn, name, c_interface, result, arguments in _runtime_function_table():
        symbol = ("_mlir_ciface_" if c_interface == "true" else "") + name
        if symbol not in functions:
            drift.append("%s (RuntimeFn::%s): in the compiler's table, "
                         "declared in no header" % (symbol, fn))
            continue
        table = [KIND_OF_TABLE[kind.strip().replace("Kind::", "")]
                 for kind in arguments.split(",") if kind.strip()]
        c_result, c_arguments = functions[symbol]
        c_arguments = [_memref_kind(kind) for kind in c_arguments]
        if KIND_OF_TABLE[result] != c_result or table != c_arguments:
            drift.append("%s: table %s -> %s, header %s -> %s"
                         % (symbol, table, KIND_OF_TABLE[result],
                            c_arguments, c_result))
    assert not drift, "\n".join(drift)


def test_started_forms_take_the_blocking_arguments(declared):
    functions, _, _ = declared
    text = _source(OVERLAP)
    forms = re.findall(r"\{\s*\"(\w+)\",\s*\"(\w+)\",\s*(\d+)\s*\}", text)
    assert forms, "kStartedForms was not read"
    drift = []
    for blocking, started, written in forms:
        blocking_args = functions.get("_mlir_ciface_" + blocking, (0, None))[1]
        started_args = functions.get("_mlir_ciface_" + started, (0, None))[1]
        if blocking_args is None or started_args is None:
            drift.append("%s / %s: not both declared" % (blocking, started))
        elif blocking_args != started_args:
            drift.append("%s takes %s, its started form %s takes %s"
                         % (blocking, blocking_args, started, started_args))
        elif not blocking_args[int(written)].startswith("ptr:struct:"):
            drift.append("%s: operand %s is not a buffer" % (blocking,
                                                            written))
    assert not drift, "\n".join(drift)
