#!/usr/bin/env bash
# A step named `step` compiled with --emit=shared: records the runtime as
# DT_NEEDED with a RUNPATH, exports only _mlir_ciface_step, and runs when
# loaded from C (dlopen) and from Python (ctypes); a step with two results
# returns them right, also into the descriptor of one of its arguments.
# Usage: shared-step.sh <gradcomm-compile> <inputs dir> <work dir>
set -euo pipefail
compile=$1 inputs=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"

"$compile" "$inputs/shared-step.mlir" -o libstep.so --emit=shared \
  --strategy=dense --emit-header=step.h
readelf -d libstep.so | grep -q 'NEEDED.*\[libgradcomm_runtime.so\]' ||
  { echo "libstep.so does not record libgradcomm_runtime.so"; exit 1; }
readelf -d libstep.so | grep -q 'RUNPATH' ||
  { echo "libstep.so has no RUNPATH"; exit 1; }
if nm -D --defined-only libstep.so | grep -qw 'step'; then
  echo "libstep.so exports 'step' (it must stay internal)"; exit 1
fi

cc -std=c11 -Wall -Werror -I. "$inputs/load-shared-step.c" -o load-shared-step -ldl
./load-shared-step "$work/libstep.so"
"${GRADCOMM_PYTHON:-/usr/bin/python3}" "$inputs/load_shared_step.py" "$work/libstep.so"

# Two results, one call with the result over an argument's descriptor.
"$compile" "$inputs/pair-step.mlir" -o libpair.so --emit=shared \
  --strategy=dense --emit-header=pair.h
cc -std=c11 -Wall -Werror -I. "$inputs/load-pair-step.c" -o load-pair-step -ldl
./load-pair-step "$work/libpair.so"
