#!/usr/bin/env bash
# bench/cpu/run.sh - CPU kernel benchmark, reported as ratios to a memcpy
# measured in the same run (docs/design/benchmarks.md, CPU kernels). Single
# thread, pinned to one core; wall time and CPU time side by side.
#
# Sizes come from this machine's caches (lscpu): 1M elements, 16M, and the
# smallest power of two whose one vector is at least twice the last-level
# cache, so the largest size is DRAM-resident wherever it runs. Each size is
# labelled with where a copy's working set (8 B per element) fits. Inputs:
# uniform random, sparse (0.1 % non-zero, fewer than k), and layered (eight
# slices scaled 1e-4 ... 1e3). The largest size needs about 16 bytes per
# element of memory (4 GiB at 256M).
#
#   bench/cpu/run.sh [build-dir]      (default: build)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
ninja -C "$build" gradcomm-kernels-bench >/dev/null

# Cache sizes in bytes ("L3 cache: 300 MiB (1 instance)" with -B: bytes).
cache_bytes() {
  lscpu -B 2>/dev/null | awk -v level="$1" '$1 == level && $2 == "cache:" { print $3; exit }'
}
l2=$(cache_bytes L2)
l3=$(cache_bytes L3)
l2=${l2:-0}
l3=${l3:-0}
last=$((l3 > l2 ? l3 : l2))
dram=$((1 << 24))
while ((4 * dram < 2 * last)); do dram=$((dram * 2)); done
sizes="$((1 << 20)),$((1 << 24))"
((dram > (1 << 24))) && sizes="$sizes,$dram"
echo "lscpu: L2 $((l2 >> 20)) MiB, L3 $((l3 >> 20)) MiB (totals over instances); sizes $sizes"

out=$(mktemp)
GRADCOMM_BENCH_SIZES=$sizes taskset -c 0 "$build/bench/gradcomm-kernels-bench" \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_format=json >"$out"
python3 - "$out" "$l2" "$l3" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
l2, l3 = int(sys.argv[2]), int(sys.argv[3])
med = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name, n = b["run_name"].split("/")[:2]
    med[(name, int(n))] = b

def where(n):
    working_set = 8 * n  # a copy: source and destination
    if l2 and working_set <= l2:
        return "L2"
    if l3 and working_set <= l3:
        return "L3"
    return "DRAM"

print(f"{'N':>10} {'fits':<5} {'kernel':<27} {'wall ms':>9} {'cpu ms':>9} {'GB/s':>7} {'/copy':>6}")
for n in sorted({n for _, n in med}):
    copy = med[("BM_Copy", n)]["bytes_per_second"]
    for name in ["BM_Copy", "BM_ScanSum", "BM_FusedChunk", "BM_FusedUpdate",
                 "BM_FusedExact", "BM_ExactSelect", "BM_NthElement", "BM_ExactSelectSparse",
                 "BM_NthElementSparse", "BM_ExactSelectLayered",
                 "BM_NthElementLayered", "BM_NthElementEndToEnd",
                 "BM_NthElementEndToEndSparse", "BM_NthElementEndToEndLayered"]:
        b = med[(name, n)]
        bw = b["bytes_per_second"]
        print(f"{n:>10} {where(n):<5} {name[3:]:<27} {b['real_time']:>9.2f} "
              f"{b['cpu_time']:>9.2f} {bw/1e9:>7.2f} {bw/copy:>6.2f}")
    sel = med[("BM_ExactSelect", n)]["real_time"]
    nth = med[("BM_NthElement", n)]["real_time"]
    # Input-read equivalents: selection time in units of reading 4N bytes at
    # copy bandwidth.
    reads = sel * 1e-3 * copy / (4 * n)
    whole = med[("BM_NthElementEndToEnd", n)]["real_time"]
    print(f"{n:>10} exact selection: {reads:.2f} input-read equivalents, "
          f"{nth/sel:.1f}x faster than std::nth_element (keys given), "
          f"{whole/sel:.1f}x end to end")
    # The floor: a selection must read m and g once (BM_ScanSum).
    scan = med[("BM_ScanSum", n)]["real_time"]
    for kind, label in [("Sparse", "sparse (0.1% non-zero, k = N/100)"),
                        ("Layered", "layered (8 scales 1e-4..1e3)")]:
        ours = med[("BM_ExactSelect" + kind, n)]["real_time"]
        theirs = med[("BM_NthElement" + kind, n)]["real_time"]
        whole = med[("BM_NthElementEndToEnd" + kind, n)]["real_time"]
        print(f"{n:>10} {label}: exact selection {theirs/ours:.1f}x faster "
              f"than std::nth_element (keys given), {whole/ours:.1f}x end to "
              f"end, {ours/scan:.2f}x one read of m and g")
    print(f"{n:>10} uniform: exact selection {sel/scan:.2f}x one read of m and g")
PY
rm -f "$out"
