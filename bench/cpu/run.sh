#!/usr/bin/env bash
# bench/cpu/run.sh - CPU kernel benchmark, reported as ratios to a memcpy
# measured in the same run (docs/design/benchmarks.md, CPU kernels). Single thread, pinned
# to one core. Needs ~5 GiB of memory for the 256M-element sizes.
#
#   bench/cpu/run.sh [build-dir]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ninja -C "$build" gradcomm-kernels-bench >/dev/null
out=$(mktemp)
taskset -c 0 "$build/bench/gradcomm-kernels-bench" \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$out"
python3 - "$out" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
med = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, n = b["run_name"].split("/")[:2]
    med[(name, int(n))] = b
print(f"{'N':>10} {'kernel':<16} {'ms':>9} {'GB/s':>7} {'/copy':>6}")
for n in sorted({n for _, n in med}):
    copy = med[("BM_Copy", n)]["bytes_per_second"]
    for name in ["BM_Copy", "BM_FusedChunk", "BM_FusedUpdate", "BM_FusedExact",
                 "BM_ExactSelect", "BM_NthElement", "BM_ExactSelectSparse",
                 "BM_NthElementSparse"]:
        b = med[(name, n)]
        bw = b["bytes_per_second"]
        print(f"{n:>10} {name[3:]:<16} {b['real_time']:>9.2f} {bw/1e9:>7.2f} {bw/copy:>6.2f}")
    sel = med[("BM_ExactSelect", n)]["real_time"]
    nth = med[("BM_NthElement", n)]["real_time"]
    # Input-read equivalents: selection time in units of reading 4N bytes at
    # copy bandwidth.
    reads = sel * 1e-3 * copy / (4 * n)
    print(f"{n:>10} exact selection: {reads:.2f} input-read equivalents, "
          f"{nth/sel:.1f}x faster than std::nth_element")
    sparse = med[("BM_ExactSelectSparse", n)]["real_time"]
    nth_sparse = med[("BM_NthElementSparse", n)]["real_time"]
    print(f"{n:>10} sparse input (0.1% non-zero, k = N/100): exact "
          f"selection {nth_sparse/sparse:.1f}x faster than "
          f"std::nth_element")
PY
rm -f "$out"
