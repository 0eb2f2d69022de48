"""Calls a step compiled with `gradcomm-compile --emit=shared` from Python
(numpy arrays in and out, through ctypes), using the manifest that
gradcomm-export writes beside the MLIR.

    step = CompiledStep("libstep.so", "step.json")
    outputs = step(inputs)          # dict name -> numpy array, both ways
    step.close()                    # gradcomm_finalize (MPI_Finalize)

Inputs are copied before the call (the compiled step may update its
arguments in place); outputs are copied out and their buffers released
with gradcomm_free_buffer.

A step compiled with `--on-error=return` returns when one of its runtime
calls fails (a non-finite gradient under the `error` policy, ranks that
disagree): the call raises GradCommError with the status and the
runtime's message, on every rank, and the step's outputs are dropped. The
inputs the caller holds are untouched (they were copied), so skipping the
batch is `except GradCommError as e: if e.status == NON_FINITE: continue`.
Compiled with the default `--on-error=abort`, such a failure ends the job.
"""

import ctypes
import json

import numpy as np

from gradcomm.runtime import GradCommError, NONFINITE_POLICIES

# bf16 has no numpy type: its arrays hold the raw bits (uint16).
C_TYPES = {"f32": ctypes.c_float, "i64": ctypes.c_int64, "i1": ctypes.c_bool,
           "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16}
NUMPY_TYPES = {"f32": np.float32, "i64": np.int64, "i1": np.bool_,
               "f16": np.float16, "bf16": np.uint16}

_descriptor_types = {}


def descriptor_type(dtype, rank):
    """The ranked memref descriptor struct MLIR's C interface uses."""
    key = (dtype, rank)
    if key not in _descriptor_types:
        pointer = ctypes.POINTER(C_TYPES[dtype])
        fields = [("allocated", pointer), ("aligned", pointer),
                  ("offset", ctypes.c_int64)]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank),
                       ("strides", ctypes.c_int64 * rank)]
        _descriptor_types[key] = type(
            "MemRef_%s_%dd" % (dtype, rank), (ctypes.Structure,),
            {"_fields_": fields})
    return _descriptor_types[key]


def describe(array, dtype):
    descriptor = descriptor_type(dtype, array.ndim)()
    pointer = array.ctypes.data_as(ctypes.POINTER(C_TYPES[dtype]))
    descriptor.allocated = descriptor.aligned = pointer
    descriptor.offset = 0
    if array.ndim:
        itemsize = array.itemsize
        for i in range(array.ndim):
            descriptor.sizes[i] = array.shape[i]
            descriptor.strides[i] = array.strides[i] // itemsize
    return descriptor


def read_out(descriptor, entry):
    shape = tuple(entry["shape"])
    dtype = NUMPY_TYPES[entry["dtype"]]
    itemsize = np.dtype(dtype).itemsize
    count = int(np.prod(shape)) if shape else 1
    address = ctypes.cast(descriptor.aligned, ctypes.c_void_p).value
    if count == 0:
        return np.zeros(shape, dtype)
    address += descriptor.offset * itemsize
    strides = tuple(descriptor.strides[i] * itemsize
                    for i in range(len(shape))) if shape else ()
    span = 1 + sum((s - 1) * abs(st) // itemsize
                   for s, st in zip(shape, strides))
    flat = np.ctypeslib.as_array(
        (C_TYPES[entry["dtype"]] * span).from_address(address))
    view = np.lib.stride_tricks.as_strided(flat.view(dtype), shape, strides)
    return np.array(view, copy=True)


class CompiledStep:
    def __init__(self, library, manifest):
        if isinstance(manifest, str):
            with open(manifest) as f:
                manifest = json.load(f)
        self.manifest = manifest
        self.library = ctypes.CDLL(library)
        self.function = getattr(self.library,
                                "_mlir_ciface_" + manifest["function"])
        self.function.restype = None
        # Results that are arguments are not in the C signature.
        self.returned = [e for e in manifest["outputs"]
                         if "aliases_input" not in e]
        self.results_type = type("Results", (ctypes.Structure,), {
            "_fields_": [("r%d" % i, descriptor_type(e["dtype"],
                                                     len(e["shape"])))
                         for i, e in enumerate(self.returned)]})
        for name, restype in (("gradcomm_init", ctypes.c_int),
                              ("gradcomm_finalize", ctypes.c_int),
                              ("gradcomm_rank", ctypes.c_int),
                              ("gradcomm_free_buffer", None),
                              ("gradcomm_take_step_status", ctypes.c_int),
                              ("gradcomm_set_nonfinite_policy", ctypes.c_int),
                              ("gradcomm_last_error", ctypes.c_char_p)):
            getattr(self.library, name).restype = restype
        self.library.gradcomm_free_buffer.argtypes = [ctypes.c_void_p]
        self._check(self.library.gradcomm_init(), "gradcomm_init")

    def _check(self, status, what):
        if status != 0:
            message = self.library.gradcomm_last_error() or b""
            raise GradCommError(status,
                                "%s failed: %s" % (what, message.decode()))

    def set_nonfinite_policy(self, policy):
        """'error', 'skip' or 'propagate' (docs/runtime.md)."""
        if policy not in NONFINITE_POLICIES:
            raise ValueError("non-finite policy must be one of %s, got %r"
                             % (sorted(NONFINITE_POLICIES), policy))
        self._check(self.library.gradcomm_set_nonfinite_policy(
            NONFINITE_POLICIES[policy]), "gradcomm_set_nonfinite_policy")

    def rank(self):
        value = ctypes.c_int()
        self._check(self.library.gradcomm_rank(ctypes.byref(value)),
                    "gradcomm_rank")
        return value.value

    def sum_over_ranks(self, array, name=b"runner.sum"):
        """Sums a float32 numpy array over the step's ranks, in place (a
        dense all-reduce of the runtime; collective: every rank calls it)."""
        if array.dtype != np.float32 or not array.flags["C_CONTIGUOUS"]:
            raise TypeError("sum_over_ranks takes a contiguous float32 array")
        function = self.library.gradcomm_dense_all_reduce_f32
        function.restype = ctypes.c_int
        function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_int]
        self._check(function(name, array.ctypes.data, array.size, 0),
                    "gradcomm_dense_all_reduce_f32")
        return array

    def __call__(self, inputs):
        arrays, descriptors = [], []
        for entry in self.manifest["inputs"]:
            if entry["name"] not in inputs:
                raise KeyError("missing input '%s'" % entry["name"])
            array = np.array(inputs[entry["name"]],
                             dtype=NUMPY_TYPES[entry["dtype"]], copy=True,
                             order="C")
            if tuple(array.shape) != tuple(entry["shape"]):
                raise ValueError("input '%s' has shape %s, the step expects "
                                 "%s" % (entry["name"], list(array.shape),
                                         entry["shape"]))
            arrays.append(array)
            descriptors.append(describe(array, entry["dtype"]))
        results = self.results_type()
        pointers = [ctypes.byref(d) for d in descriptors]
        if self.returned:
            self.function(ctypes.byref(results), *pointers)
        else:
            self.function(*pointers)
        outputs = {}
        owned = {a.ctypes.data for a in arrays}
        freed = set()
        by_name = {e["name"]: a for e, a in zip(self.manifest["inputs"],
                                                 arrays)}
        for entry in self.manifest["outputs"]:
            if "aliases_input" in entry:
                outputs[entry["name"]] = by_name[entry["aliases_input"]]
        for i, entry in enumerate(self.returned):
            descriptor = getattr(results, "r%d" % i)
            outputs[entry["name"]] = read_out(descriptor, entry)
            allocated = ctypes.cast(descriptor.allocated,
                                    ctypes.c_void_p).value
            if allocated and allocated not in owned and allocated not in freed:
                freed.add(allocated)
                self.library.gradcomm_free_buffer(allocated)
        status = self.library.gradcomm_take_step_status()
        if status != 0:
            message = self.library.gradcomm_last_error() or b""
            raise GradCommError(status, "step %s failed: %s" % (
                self.manifest["function"], message.decode()))
        return outputs

    def close(self):
        self._check(self.library.gradcomm_finalize(), "gradcomm_finalize")
