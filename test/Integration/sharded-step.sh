#!/usr/bin/env bash
# A sharded data-parallel step (Inputs/sharded-step.mlir: reduce-scatter,
# update, all-gather) compiled for 2
# and for 4 ranks, dense and with ScaleCom (two dense warm-up steps; and
# with momentum correction), run on as many ranks; Inputs/sharded_step.py says what is checked. On a job
# of the wrong size the step stops with a message naming the grid.
# Usage: sharded-step.sh <gradcomm-compile> <mpiexec> <inputs dir> <work dir>
set -euo pipefail
compile=$1 mpiexec=$2 inputs=$3 work=$4
python=${GRADCOMM_PYTHON:-/usr/bin/python3}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for ranks in 2 4; do
  # momentum: ScaleCom with momentum correction (0.5) in the runtime.
  for mode in dense scalecom momentum; do
    policy=${mode/momentum/scalecom}
    sed -e "s/RANKS/$ranks/" -e "s/SHARD/$((8 / ranks))/g" \
      -e "s/POLICY/$policy/" "$inputs/sharded-step.mlir" >"$mode$ranks.mlir"
    options=(--strategy="$policy")
    [[ $policy == scalecom ]] && options+=(--warmup-steps=2 --report)
    [[ $mode == momentum ]] && options+=(--momentum=0.5)
    "$compile" "$mode$ranks.mlir" -o "lib$mode$ranks.so" --emit=shared \
      "${options[@]}" 2>"$mode$ranks.log" || { cat "$mode$ranks.log"; exit 1; }
    timeout 120 "$mpiexec" -n "$ranks" "$python" "$inputs/sharded_step.py" \
      "$mode" "$work/lib$mode$ranks.so" "$ranks"
  done
done
# The compressed step really is the compressed reduce-scatter.
grep -q "compressed 'tensor<8x32xf32>' with k = 24 of 256" scalecom2.log ||
  { cat scalecom2.log; echo "the reduce-scatter was not compressed"; exit 1; }
nm -D libscalecom4.so | grep -q gradcomm_rt_scalecom_reduce_scatter_f32 ||
  { echo "no compressed reduce-scatter call in the step"; exit 1; }
nm -D libdense2.so | grep -q gradcomm_rt_all_gather_f32 ||
  { echo "no all-gather call in the step"; exit 1; }
if timeout 120 "$mpiexec" -n 2 "$python" "$inputs/sharded_step.py" dense \
  "$work/libdense4.so" 4 >wrong-size.log 2>&1; then
  echo "the 4-rank step ran on 2 ranks"; exit 1
fi
grep -q "compiled for a grid of 4 processes but runs on 2" wrong-size.log ||
  { cat wrong-size.log; echo "no message naming the grid"; exit 1; }
echo "sharded-step: ok"
