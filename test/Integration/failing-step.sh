#!/usr/bin/env bash
# A step compiled with --on-error=return whose runtime calls fail, on 2
# ranks (Inputs/failing_step.py says what is checked).
# Usage: failing-step.sh <gradcomm-compile> <mpiexec> <inputs dir> <work dir>
set -euo pipefail
compile=$1 mpiexec=$2 inputs=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$compile" "$inputs/failing-step.mlir" -o libstep.so --emit=shared \
  --strategy=scalecom --on-error=return
timeout 120 "$mpiexec" -n 2 "${GRADCOMM_PYTHON:-/usr/bin/python3}" "$inputs/failing_step.py" \
  "$work/libstep.so"
