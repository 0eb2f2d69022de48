#!/usr/bin/env bash
# Momentum correction in compiled steps: Inputs/plain-step.mlir (plain SGD)
# compiled with --momentum against Inputs/momentum-step.mlir (the momentum
# buffer in the graph) and against the runtime's own recipe call, on 2
# ranks; Inputs/momentum_step.py says what is checked.
# Usage: momentum-step.sh <gradcomm-compile> <mpiexec> <inputs dir> <work dir>
set -euo pipefail
compile=$1 mpiexec=$2 inputs=$3 work=$4
python=${GRADCOMM_PYTHON:-/usr/bin/python3}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
build() { # build <name> <input> <options...>
  local name=$1 input=$2
  shift 2
  "$compile" "$input" -o "lib$name.so" --emit=shared "$@" 2>"$name.log" ||
    { cat "$name.log"; exit 1; }
}
build graph "$inputs/momentum-step.mlir" --strategy=dense
build runtime "$inputs/plain-step.mlir" --strategy=scalecom --momentum=0.9 \
  --warmup-steps=1000 --report
build compressed "$inputs/plain-step.mlir" --strategy=scalecom \
  --momentum=0.9 --warmup-steps=2
# The bias (16 elements) is kept dense by the policy and still gets its
# velocity through the recipe's dense call.
grep -q "left dense (16 elements < min-elements (1024)), through the recipe's dense call" \
  runtime.log || { cat runtime.log; echo "the bias lost its velocity"; exit 1; }
timeout 120 "$mpiexec" -n 2 "$python" "$inputs/momentum_step.py" dense \
  "$work/libruntime.so" "$work/libgraph.so"
timeout 120 "$mpiexec" -n 2 "$python" "$inputs/momentum_step.py" compressed \
  "$work/libcompressed.so"
# A step that keeps its own momentum buffer is refused, not doubled.
if "$compile" "$inputs/momentum-step.mlir" -o libtwice.so --emit=shared \
  --strategy=scalecom --momentum=0.9 2>twice.log; then
  echo "momentum on top of an in-graph momentum buffer was accepted"; exit 1
fi
grep -q "momentum correction needs a step exported with plain SGD" twice.log ||
  { cat twice.log; exit 1; }
echo "momentum-step: ok"
