#!/usr/bin/env bash
# An example model (examples/pytorch/models.py) exported with
# gradcomm-export and compiled with gradcomm-compile:
#   - dense on 1 and on 4 ranks: the parameters after 5 steps equal
#     PyTorch's data-parallel step within 1e-5 (relative to each tensor's
#     largest magnitude) on every rank;
#   - dense on 4 ranks compiled with --overlap (reductions hoisted to their
#     gradients, waits at their uses): the same bits as without;
#   - ScaleCom on 4 ranks: the replicas stay bit-identical (3 steps);
#   - ScaleCom on 4 ranks with a 5-step dense warm-up (the recipe, lowered
#     to the runtime's recipe call): the same bits as dense for 5 steps;
#   - gossip on 4 ranks, plain SGD: the replicas differ and their mean
#     equals PyTorch's step (1 step from identical replicas; mixing keeps
#     the mean, and plain SGD is linear in the gradient, so the mean of the
#     local steps is the averaged-gradient step; with Adam it is not).
# Usage: model-steps.sh <model> <bin dir> <mpiexec> <work dir>
set -euo pipefail
model=$1 bin=$2 mpiexec=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${GRADCOMM_PYTHON:-/usr/bin/python3}
rm -rf "$work" && mkdir -p "$work" && cd "$work"

# Each model exercises another optimizer and reduction.
case $model in
  mlp)
    flags=(--optimizer sgd --lr 0.05 --momentum 0.9 --weight-decay 1e-4
           --reduction sum)
    options='{"momentum": 0.9, "weight_decay": 1e-4}' ;;
  cnn)
    flags=(--optimizer adam --lr 0.002 --weight-decay 0.01)
    options='{"weight_decay": 0.01}' ;;
  transformer)
    flags=(--optimizer sgd --lr 0.1 --momentum 0.9 --nesterov)
    options='{"momentum": 0.9, "nesterov": true}' ;;
  *) echo "unknown model $model"; exit 2 ;;
esac

run() { # <ranks> <model_step.py run arguments...>: one job, one process per rank
  local ranks=$1
  shift
  "$mpiexec" -n "$ranks" "$python" "$here/model_step.py" run --model "$model" "$@"
}

for ranks in 1 4; do
  "$bin/gradcomm-export" "$root/examples/pytorch/models.py:$model" \
    --batch 4 --ranks "$ranks" "${flags[@]}" -o "np$ranks.mlir"
done
"$bin/gradcomm-compile" np1.mlir -o libdense1.so --emit=shared --strategy=dense
"$bin/gradcomm-compile" np4.mlir -o libdense4.so --emit=shared --strategy=dense
# Reductions started right after their gradients, waited for at their use.
"$bin/gradcomm-compile" np4.mlir -o libdense4-overlap.so --emit=shared \
  --strategy=dense --overlap
"$bin/gradcomm-compile" np4.mlir -o libscalecom4.so --emit=shared \
  --strategy=scalecom --ratio=10 --min-elements=64 --warmup-steps=0
"$bin/gradcomm-compile" np4.mlir -o libscalecom4-warmup.so --emit=shared \
  --strategy=scalecom --ratio=10 --min-elements=64 --warmup-steps=5
"$bin/gradcomm-export" "$root/examples/pytorch/models.py:$model" \
  --batch 4 --ranks 4 --optimizer sgd --lr 0.05 -o np4-sgd.mlir
"$bin/gradcomm-compile" np4-sgd.mlir -o libgossip4.so --emit=shared \
  --strategy=gossip --schedule=matching --mixing=0.5

run 1 --job dense1 5 np1.json "$options" --check dense1
# The 4-rank steps one after another in one job (a Python start-up per rank
# is about 3 s of CPU: one job per step made up much of this test's time).
run 4 --job dense4 5 np4.json "$options" --check dense4 \
  --job dense4-overlap 5 np4.json "$options" \
  --job scalecom4 3 np4.json "$options" \
  --job scalecom4-warmup 5 np4.json "$options" \
  --job gossip4 1 np4-sgd.json '{}'
"$python" "$here/model_step.py" identical --out out-dense4-overlap \
  --other out-dense4
"$python" "$here/model_step.py" identical --out out-scalecom4-warmup \
  --other out-dense4
"$python" "$here/model_step.py" replicas --out out-scalecom4
"$python" "$here/model_step.py" mean --model "$model" --manifest np4-sgd.json \
  --out out-gossip4
