#!/usr/bin/env bash
# A step exported with --lr-input takes its learning rate from
# examples/pytorch/train.py each step: without --lr it refuses to start,
# lr 0 learns nothing, and the cosine schedule changes the run.
# Usage: lr-input.sh <python> <mpiexec> <bin dir> <work>
set -euo pipefail
python=$1 mpiexec=$2 bin=$3 work=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
# The transformer on the GPL's text: no dataset package needed.
"$bin/gradcomm-export" "$root/examples/pytorch/models.py:transformer" \
  --batch 32 --ranks 2 --optimizer adam --lr 0.003 --lr-input -o step.mlir
"$bin/gradcomm-compile" step.mlir --emit=shared -o libdense.so \
  --strategy=dense
train() { # train <name> <train.py options...>: prints the test loss
  local name=$1
  shift
  timeout 300 "$mpiexec" -n 2 "$python" "$root/examples/pytorch/train.py" \
    --model transformer --library ./libdense.so --manifest step.json \
    --epochs 0.02 --optimizer-options "" --seed 1 "$@" >"$name.log" 2>&1 ||
    return 1
  sed -n 's/.*test loss \([0-9.]*\).*/\1/p' "$name.log"
}
if train missing; then
  echo "a step with an lr input ran without --lr"; exit 1
fi
grep -q "the step takes its learning rate as an input" missing.log ||
  { cat missing.log; exit 1; }
frozen=$(train frozen --lr 0)
constant=$(train constant --lr 0.003)
cosine=$(train cosine --lr 0.003 --lr-schedule cosine)
echo "test loss: lr 0 $frozen, lr 0.003 $constant, cosine $cosine"
"$python" - "$frozen" "$constant" "$cosine" <<'PY'
import sys
frozen, constant, cosine = map(float, sys.argv[1:])
assert constant < frozen - 0.1, "the lr input did not reach the update"
assert cosine != constant, "the schedule did not reach the step"
PY
echo "lr-input: ok"
