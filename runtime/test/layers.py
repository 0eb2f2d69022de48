#!/usr/bin/env python3
"""runtime.layers: the runtime's modules depend one way, and only the MPI
transport (and the MPI bootstrap, which starts it) calls MPI.

The modules are runtime/src's directories, lowest first:

    kernels <- transport <- common <- cpu <- ops <- bootstrap

Two graphs are checked against that order: the includes (each `#include
"..."` of a source file) and the calls (each symbol an object file uses
that another module's object file defines, read with `nm`). A circle in
either graph needs an edge against the order, and is reported with the
files and the symbol. src/cuda is the separately loaded CUDA library: it
may include the table it implements (CudaBackendTable.h) and nothing else
of the runtime.

Usage: layers.py RUNTIME_SRC_DIR OBJECT_FILE...
"""

import collections
import os
import re
import subprocess
import sys

ORDER = ["kernels", "transport", "common", "cpu", "ops", "bootstrap"]
# Object files allowed to call MPI themselves (prefix under src/).
MPI_CALLERS = ("transport/MpiTransport", "bootstrap/")
# The CUDA library links nothing of the runtime: the table is its contract,
# Shards.h (header-only arithmetic) how shards are cut.
CUDA_MAY_INCLUDE = {"CudaBackendTable.h", "Shards.h"}


def module_of(path, src):
    return os.path.relpath(path, src).split(os.sep)[0]


def check_includes(src):
    files = {}
    for directory, _, names in os.walk(src):
        for name in names:
            files.setdefault(name, os.path.join(directory, name))
    problems = []
    for name, path in sorted(files.items()):
        module = module_of(path, src)
        with open(path, encoding="utf-8") as source:
            for line in source:
                match = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not match or match.group(1) not in files:
                    continue  # a public header (gradcomm/...) or the stub
                included = match.group(1)
                target = module_of(files[included], src)
                if target == module:
                    continue
                if module == "cuda":
                    if included not in CUDA_MAY_INCLUDE:
                        problems.append(f"{name} (cuda) includes {included}")
                    continue
                if module not in ORDER or target not in ORDER:
                    problems.append(f"{name} ({module}) includes {included} "
                                    f"({target}): unknown module")
                elif ORDER.index(target) > ORDER.index(module):
                    problems.append(f"{name} ({module}) includes {included} "
                                    f"({target}), a module above it")
    return problems


def symbols(path, *flags):
    out = subprocess.run(["nm", *flags, path], check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


def check_calls(src_objects):
    defined = {}
    used = collections.defaultdict(set)
    for obj in src_objects:
        # .../src/<module>/<File>.cpp.o
        module = os.path.basename(os.path.dirname(obj))
        label = f"{module}/{os.path.basename(obj)[:-len('.cpp.o')]}"
        for line in symbols(obj, "--defined-only"):
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TW":
                defined.setdefault(parts[2], label)
        for line in symbols(obj, "--undefined-only"):
            used[label].add(line.split()[-1])
    problems = []
    edges = collections.Counter()
    for label, names in sorted(used.items()):
        module = label.split("/")[0]
        for name in sorted(names):
            if (name.startswith("MPI_") or name.startswith("PMPI_")) and \
                    not label.startswith(MPI_CALLERS):
                problems.append(f"{label} calls {name}: only the MPI "
                                "transport talks to MPI")
            owner = defined.get(name)
            if not owner:
                continue
            target = owner.split("/")[0]
            if target == module:
                continue
            edges[(module, target)] += 1
            if ORDER.index(target) > ORDER.index(module):
                problems.append(f"{label} ({module}) calls {name} of {owner} "
                                f"({target}), a module above it")
    return problems, edges


def main():
    src, objects = sys.argv[1], sys.argv[2:]
    if not objects:
        sys.exit("layers.py: no object files given")
    problems = check_includes(src)
    call_problems, edges = check_calls(objects)
    problems += call_problems
    for (user, owner), count in sorted(edges.items()):
        print(f"{user} -> {owner}: {count} symbols")
    for problem in problems:
        print("layers: " + problem, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"layers: {len(objects)} objects, modules one way: "
          + " <- ".join(ORDER))


if __name__ == "__main__":
    main()
