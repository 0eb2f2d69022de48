#!/usr/bin/env bash
# scripts/scaling_curves.sh - the simulator's curves in docs/scaling.md:
# gradcomm-plan --simulate on a 25M-parameter step (25 gradients of 1M
# floats, bench/compile/gen_step.py) for 2 to 1024 ranks, in four
# settings: 1 Gbit/s and 100 Gbit/s links, each without stragglers and
# with 5 % of rank-steps 4x slower; 100 ms of compute per step. Writes the
# CSVs and the plots to OUT (default docs/results/scaling).
#
#   BUILD_DIR=build OUT=docs/results/scaling scripts/scaling_curves.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${OUT:-docs/results/scaling}
mkdir -p "$out"
step=$(mktemp --suffix=.mlir)
trap 'rm -f "$step"' EXIT
"${GRADCOMM_PYTHON:-/usr/bin/python3}" bench/compile/gen_step.py 25 --size 1000000 --ranks 4 >"$step"
strategies=dense,scalecom-r100-exact,local-topk-r100,gossip,gossip-async,easgd-p4,easgd-async-p4
for setting in "1gbit 1Gbit 50us" "100gbit 100Gbit 5us"; do
  read -r tag bandwidth latency <<<"$setting"
  for straggle in 0 0.05; do
    csv="$out/$tag-stragglers$straggle.csv"
    "$build/bin/gradcomm-plan" "$step" --simulate --bandwidth "$bandwidth" \
      --latency "$latency" --compute-ms 100 --steps 200 --seed 1 \
      --straggler-rate "$straggle" --straggler-factor 4 \
      --strategies "$strategies" --csv "$csv" >"${csv%.csv}.txt"
    echo "wrote $csv"
  done
done
"${GRADCOMM_PYTHON:-/usr/bin/python3}" scripts/lib/scaling_plot.py "$out"
