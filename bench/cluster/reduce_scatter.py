"""Dense against compressed reduce-scatter, one process per rank under
mpiexec (shared memory) or bench/cluster/netns.sh run (the emulated
cluster): gradcomm_reduce_scatter_f32 and
gradcomm_scalecom_reduce_scatter_f32 at ratios 100 and 1000, the dense and
the ratio-100 forms with the values in bfloat16
(gradcomm_reduce_scatter_wire_f32, the recipe's `wire`: what FSDP's
MixedPrecision(reduce_dtype=torch.bfloat16) sends through the hooks),
beside gradcomm_dense_all_reduce_f32 (what unsharded training sends), for
each size in SIZES. Rounds alternate the forms (BENCHMARKS.md: ratios in one
run); each prints the median wall and CPU time per call over the rounds
and the bytes each rank sent per call (the runtime's counters).

  mpiexec.mpich -n 2 .venv/bin/python bench/cluster/reduce_scatter.py
  bench/cluster/netns.sh run 2 .venv/bin/python \\
      bench/cluster/reduce_scatter.py
"""

import argparse
import ctypes
import statistics
import time

import numpy as np

from gradcomm.runtime import (REDUCTIONS, SELECTIONS, WIRES,  # noqa: E402
                              RecipeOptions, runtime)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,16000000")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5,
                        help="calls per form per round (timed together)")
    args = parser.parse_args()
    rt = runtime()
    rt.call("gradcomm_init")
    rank, size = rt.rank(), rt.size()
    forms = ["all-reduce", "reduce-scatter", "reduce-scatter-bf16",
             "scalecom-rs-r100", "scalecom-rs-r100-bf16", "scalecom-rs-r1000"]
    rng = np.random.default_rng(rank)
    for count in [int(s) for s in args.sizes.split(",")]:
        grad = rng.standard_normal(count, dtype=np.float32)
        work = np.empty_like(grad)
        begin, length = ctypes.c_int64(), ctypes.c_int64()
        rt.call("gradcomm_shard_range", count, rank, size,
                ctypes.byref(begin), ctypes.byref(length))
        shard = np.empty(max(1, length.value), dtype=np.float32)
        wall = {form: [] for form in forms}
        cpu = {form: [] for form in forms}

        def run(form):
            name = ("%s.%d" % (form, count)).encode()
            if form == "all-reduce":
                np.copyto(work, grad)
                rt.call("gradcomm_dense_all_reduce_f32", name,
                        work.ctypes.data, count, REDUCTIONS["average"])
            elif form == "reduce-scatter":
                np.copyto(work, grad)
                rt.call("gradcomm_reduce_scatter_f32", name, work.ctypes.data,
                        shard.ctypes.data, count, REDUCTIONS["average"])
            elif form == "reduce-scatter-bf16":
                rt.call("gradcomm_reduce_scatter_wire_f32", name,
                        grad.ctypes.data, shard.ctypes.data, count,
                        WIRES["bf16"], REDUCTIONS["average"])
            elif form.endswith("-bf16"):
                options = RecipeOptions()
                rt.library.gradcomm_scalecom_options_init(
                    ctypes.byref(options), max(1, count // 100))
                options.beta = 1.0
                options.warmup_steps = 0
                options.wire = WIRES["bf16"]
                rt.call("gradcomm_scalecom_reduce_scatter_recipe_f32", name,
                        grad.ctypes.data, shard.ctypes.data, count,
                        ctypes.byref(options), REDUCTIONS["average"])
            else:
                ratio = int(form.rsplit("r", 1)[1])
                rt.call("gradcomm_scalecom_reduce_scatter_f32", name,
                        grad.ctypes.data, shard.ctypes.data, count,
                        max(1, count // ratio), SELECTIONS["exact"], 0,
                        ctypes.c_float(1.0), REDUCTIONS["average"])

        for form in forms:  # warm up: states, pages, connections
            run(form)
        for _ in range(args.rounds):
            for form in forms:
                start, start_cpu = time.perf_counter(), time.process_time()
                for _ in range(args.calls):
                    run(form)
                wall[form].append((time.perf_counter() - start) / args.calls)
                cpu[form].append((time.process_time() - start_cpu) /
                                 args.calls)
        if rank == 0:
            base = statistics.median(wall["reduce-scatter"])
            print("%d ranks, %d floats:" % (size, count))
            for form in forms:
                stats = rt.stats(("%s.%d" % (form, count)).encode())
                calls = max(1, stats.calls)
                sent = (stats.value_bytes_sent + stats.index_bytes_sent) / calls
                print("  %-22s %9.2f ms wall  %9.2f ms cpu  %7.3fx dense RS"
                      "  %12.0f B sent per call" % (
                          form, 1000 * statistics.median(wall[form]),
                          1000 * statistics.median(cpu[form]),
                          statistics.median(wall[form]) / base, sent),
                      flush=True)
    if rank == 0:
        print("reduce-scatter bench: done", flush=True)
    rt.call("gradcomm_finalize")


if __name__ == "__main__":
    main()
