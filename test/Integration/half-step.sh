#!/usr/bin/env bash
# A mixed-precision step (Inputs/half-step.mlir: f32 master weights, a bf16
# or f16 gradient) compiled dense, with ScaleCom and with local top-k, and a
# 16-bit model's step (Inputs/half-replica-step.mlir) compiled with gossip
# and EASGD, and a sharded mixed-precision step
# (Inputs/half-sharded-step.mlir) compiled dense and with ScaleCom, run on
# 2 ranks; Inputs/half_step.py says what is checked.
# Usage: half-step.sh <gradcomm-compile> <mpiexec> <inputs dir> <work dir>
set -euo pipefail
compile=$1 mpiexec=$2 inputs=$3 work=$4
python=${GRADCOMM_PYTHON:-/usr/bin/python3}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
# run_step <policy> <type> <input>: compiles the input for <type> with
# <policy> (and $options), checks that it calls the runtime's <type> entry
# point, and runs Inputs/half_step.py on it at 2 ranks.
run_step() {
  local policy=$1 type=$2 input=$3 strategy=${1#sharded-}
  sed -e "s/TYPE/$type/g" -e "s/POLICY/${strategy/local-topk/scalecom}/" \
    "$input" >"$policy-$type.mlir"
  "$compile" "$policy-$type.mlir" -o "lib$policy-$type.so" --emit=shared \
    --strategy="$strategy" "${options[@]}" 2>"$policy-$type.log" ||
    { cat "$policy-$type.log"; exit 1; }
  nm -D "lib$policy-$type.so" | grep -q "gradcomm_rt_.*_$type\b" ||
    { echo "no $type runtime call in the $policy step"; exit 1; }
  timeout 120 "$mpiexec" -n 2 "$python" "$inputs/half_step.py" "$policy" \
    "$type" "$work/lib$policy-$type.so"
}
for type in bf16 f16; do
  options=()
  run_step dense "$type" "$inputs/half-step.mlir"
  options=(--warmup-steps=1 --report)
  run_step scalecom "$type" "$inputs/half-step.mlir"
  options=(--report)
  run_step local-topk "$type" "$inputs/half-step.mlir"
  # A 16-bit weight (Inputs/half-replica-step.mlir) gossiped and averaged
  # elastically, the replica travelling in its own 16 bits.
  options=(--schedule=matching --mixing=0.5 --report)
  run_step gossip "$type" "$inputs/half-replica-step.mlir"
  options=(--alpha=0.25 --report)
  run_step easgd "$type" "$inputs/half-replica-step.mlir"
  # Sharded training: the reduce-scatter and the all-gather in 16 bits.
  options=()
  run_step sharded-dense "$type" "$inputs/half-sharded-step.mlir"
  options=(--warmup-steps=1 --report)
  run_step sharded-scalecom "$type" "$inputs/half-sharded-step.mlir"
  for call in reduce_scatter all_gather; do
    nm -D "libsharded-dense-$type.so" | grep -q "gradcomm_rt_${call}_$type" ||
      { echo "no 16-bit $call in the sharded step"; exit 1; }
  done
  nm -D "libsharded-scalecom-$type.so" |
    grep -q "gradcomm_rt_scalecom_reduce_scatter_$type" ||
    { echo "no 16-bit compressed reduce-scatter in the sharded step"; exit 1; }
done
grep -q "compressed 'tensor<64x32xbf16>' with k = 40 of 2048.*state @w_grad" \
  scalecom-bf16.log || { cat scalecom-bf16.log; echo "not compressed"; exit 1; }
echo "half-step: ok"
