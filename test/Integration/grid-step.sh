#!/usr/bin/env bash
# A step compiled for a 2x2 grid (Inputs/grid-step.mlir): collectives over
# axis 0, axis 1 and both run in the runtime's groups on 4 ranks, dense and
# with ScaleCom (Inputs/grid_step.py says what is checked); on 3 ranks the
# step stops with a message naming the grid.
# Usage: grid-step.sh <gradcomm-compile> <mpiexec> <inputs dir> <work dir>
set -euo pipefail
compile=$1 mpiexec=$2 inputs=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
sed -e 's/POLICY/dense/' -e 's/K_WEIGHT/256/' "$inputs/grid-step.mlir" >dense.mlir
sed -e 's/POLICY/scalecom/' -e 's/K_WEIGHT/64/' "$inputs/grid-step.mlir" >scalecom.mlir
"$compile" dense.mlir -o libdense.so --emit=shared --strategy=dense
"$compile" scalecom.mlir -o libscalecom.so --emit=shared --strategy=scalecom \
  --warmup-steps=0 # compressed from the first step
timeout 120 "$mpiexec" -n 4 "${GRADCOMM_PYTHON:-/usr/bin/python3}" "$inputs/grid_step.py" dense \
  "$work/libdense.so"
timeout 120 "$mpiexec" -n 4 "${GRADCOMM_PYTHON:-/usr/bin/python3}" "$inputs/grid_step.py" scalecom \
  "$work/libscalecom.so"
if timeout 120 "$mpiexec" -n 3 "${GRADCOMM_PYTHON:-/usr/bin/python3}" "$inputs/grid_step.py" dense \
  "$work/libdense.so" >wrong-size.log 2>&1; then
  echo "the 2x2 step ran on 3 ranks"; exit 1
fi
grep -q "compiled for a grid of 4 processes but runs on 3" wrong-size.log ||
  { cat wrong-size.log; echo "no message naming the grid"; exit 1; }
echo "grid-step: ok"
