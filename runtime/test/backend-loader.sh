#!/usr/bin/env bash
# The CUDA backend loader names the real cause when the library beside the
# runtime cannot be loaded (here a file that is not a library), instead of
# only the error of its second attempt on the loader's search path.
# Usage: backend-loader.sh <mpiexec> <libgradcomm_runtime.so> <work dir>
set -euo pipefail
mpiexec=$1 runtime=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cp "$runtime" "$work/libgradcomm_runtime.so"
head -c 256 /dev/zero | tr '\0' 'x' >"$work/libgradcomm_runtime_cuda.so"
env -u LD_LIBRARY_PATH timeout 60 "$mpiexec" -n 1 "${GRADCOMM_PYTHON:-/usr/bin/python3}" - \
  "$work/libgradcomm_runtime.so" <<'PY'
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.gradcomm_last_error.restype = ctypes.c_char_p
status = lib.gradcomm_set_backend(1)
message = lib.gradcomm_last_error().decode()
print("status %d: %s" % (status, message))
assert status == 10, "expected GRADCOMM_ERR_UNSUPPORTED"
assert "invalid ELF header" in message, "the first dlopen error is lost"
assert "on the loader's path" in message, "the second attempt is not named"
lib.gradcomm_finalize()
print("ok")
PY
