#!/usr/bin/env python3
"""Two compilations of one step against each other: a step with PARAMS
parameters of SIZE floats (plain SGD, bench/compile/gen_step.py) compiled
with the gradcomm-compile flags of --a and of --b as shared libraries,
called alternately in one process per rank under mpiexec; wall time and
CPU time per step, median over REPEAT rounds; rank 0 prints them and the
ratio b / a. A benchmark, never a test.

Usage: mpiexec.mpich -n 2 .venv/bin/python bench/compile/compare_steps.py \\
           <bin dir> <work dir> [--params 100] [--size 10000] [--repeat 30]
           [--a="--strategy=dense"]
           [--b="--strategy=dense --bucket-elements=4194304"]  (with =: the values start with --)
"""

import argparse
import ctypes
import os
import shlex
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import describe, descriptor_type  # noqa: E402



def compile_step(args, rank, name, extra):
    library = os.path.join(args.work, "lib%s.so" % name)
    if rank == 0:
        step = os.path.join(args.work, "step.mlir")
        with open(step, "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "gen_step.py"),
                            str(args.params), "--size", str(args.size),
                            "--ranks", str(args.ranks)], stdout=f, check=True)
        subprocess.run([os.path.join(args.bin, "gradcomm-compile"), step,
                        "-o", library, "--emit=shared"] + extra, check=True)
    return library


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("work")
    parser.add_argument("--params", type=int, default=100)
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--a", default="--strategy=dense")
    parser.add_argument("--b", default="--strategy=dense "
                        "--bucket-elements=4194304")
    args = parser.parse_args()
    rank = int(os.environ.get("PMI_RANK", "0"))
    args.ranks = int(os.environ.get("PMI_SIZE", "1"))
    os.makedirs(args.work, exist_ok=True)
    libraries = {
        "a": compile_step(args, rank, "a", shlex.split(args.a)),
        "b": compile_step(args, rank, "b", shlex.split(args.b)),
    }
    # Rank 0 compiles; the others wait for the files.
    while not all(os.path.exists(path) for path in libraries.values()):
        time.sleep(0.1)
    time.sleep(0.5)
    steps = {name: ctypes.CDLL(path) for name, path in libraries.items()}
    runtime = steps["a"]
    runtime.gradcomm_free_buffer.argtypes = [ctypes.c_void_p]

    generator = np.random.default_rng(rank)
    params = [generator.standard_normal(args.size).astype(np.float32)
              for _ in range(args.params)]
    grads = [generator.standard_normal(args.size).astype(np.float32)
             for _ in range(args.params)]
    lr = np.array(0.01, dtype=np.float32)
    results_type = descriptor_type("f32", 1) * args.params

    def call(library):
        # The step may update its inputs in place: fresh copies, kept alive
        # for the call.
        arrays = [a.copy() for pair in zip(params, grads) for a in pair]
        inputs = [describe(a, "f32") for a in arrays] + [describe(lr, "f32")]
        results = results_type()
        wall, cpu = time.perf_counter(), time.process_time()
        library._mlir_ciface_step(ctypes.byref(results),
                                  *[ctypes.byref(d) for d in inputs])
        elapsed = (time.perf_counter() - wall, time.process_time() - cpu)
        for result in results:
            runtime.gradcomm_free_buffer(
                ctypes.cast(result.allocated, ctypes.c_void_p))
        return elapsed

    for _ in range(3):  # warm-up
        for library in steps.values():
            call(library)
    times = {name: [] for name in steps}
    for _ in range(args.repeat):
        for name, library in steps.items():
            times[name].append(call(library))
    if rank == 0:
        print("%d ranks, %d parameters of %d floats, median of %d"
              % (args.ranks, args.params, args.size, args.repeat))
        print("a: %s\nb: %s" % (args.a, args.b))
        print("%-10s %12s %12s" % ("step", "wall_ms", "cpu_ms"))
        medians = {}
        for name, samples in times.items():
            wall = statistics.median(s[0] for s in samples) * 1e3
            cpu = statistics.median(s[1] for s in samples) * 1e3
            medians[name] = wall
            print("%-10s %12.3f %12.3f" % (name, wall, cpu))
        print("b / a (median wall): %.2f" % (medians["b"] / medians["a"]))
    runtime.gradcomm_finalize()


if __name__ == "__main__":
    main()
