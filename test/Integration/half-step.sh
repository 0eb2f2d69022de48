#!/usr/bin/env bash
# A mixed-precision step (Inputs/half-step.mlir: f32 master weights, a bf16
# or f16 gradient) compiled dense and with ScaleCom, run on 2 ranks;
# Inputs/half_step.py says what is checked.
# Usage: half-step.sh <gradcomm-compile> <mpiexec> <inputs dir> <work dir>
set -euo pipefail
compile=$1 mpiexec=$2 inputs=$3 work=$4
python=${GRADCOMM_PYTHON:-/usr/bin/python3}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
for type in bf16 f16; do
  for policy in dense scalecom; do
    sed -e "s/TYPE/$type/g" -e "s/POLICY/$policy/" \
      "$inputs/half-step.mlir" >"$policy-$type.mlir"
    options=(--strategy="$policy")
    [[ $policy == scalecom ]] && options+=(--warmup-steps=1 --report)
    "$compile" "$policy-$type.mlir" -o "lib$policy-$type.so" --emit=shared \
      "${options[@]}" 2>"$policy-$type.log" || { cat "$policy-$type.log"; exit 1; }
    nm -D "lib$policy-$type.so" | grep -q "gradcomm_rt_.*_$type\b" ||
      { echo "no $type runtime call in the $policy step"; exit 1; }
    timeout 120 "$mpiexec" -n 2 "$python" "$inputs/half_step.py" "$policy" \
      "$type" "$work/lib$policy-$type.so"
  done
done
grep -q "compressed 'tensor<64x32xbf16>' with k = 40 of 2048.*state @w_grad" \
  scalecom-bf16.log || { cat scalecom-bf16.log; echo "not compressed"; exit 1; }
echo "half-step: ok"
