#!/usr/bin/env bash
# The CUDA backend loader names the real cause when the library beside the
# runtime cannot be used:
#  - a file that is not a library: the first dlopen's error, not only the
#    error of its second attempt on the loader's search path;
#  - a library whose table leaves an entry null (the host stand-in built
#    with GRADCOMM_FAKE_CUDA_LEAVE_OUT=forget): the entry, by name.
# Usage: backend-loader.sh <mpiexec> <libgradcomm_runtime.so> <work dir>
#          <incomplete backend library>
set -euo pipefail
mpiexec=$1 runtime=$2 work=$3 incomplete=$4

# try_backend EXPECTED...: sets the CUDA backend over the runtime in $work
# and checks that it fails as unsupported with every EXPECTED text.
try_backend() {
  env -u LD_LIBRARY_PATH timeout 60 "$mpiexec" -n 1 \
    "${GRADCOMM_PYTHON:-/usr/bin/python3}" - "$work/libgradcomm_runtime.so" \
    "$@" <<'PY'
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.gradcomm_last_error.restype = ctypes.c_char_p
status = lib.gradcomm_set_backend(1)
message = lib.gradcomm_last_error().decode()
print("status %d: %s" % (status, message))
assert status == 10, "expected GRADCOMM_ERR_UNSUPPORTED"
for expected in sys.argv[2:]:
    assert expected in message, "not in the message: " + expected
lib.gradcomm_finalize()
print("ok")
PY
}

rm -rf "$work" && mkdir -p "$work"
cp "$runtime" "$work/libgradcomm_runtime.so"
head -c 256 /dev/zero | tr '\0' 'x' >"$work/libgradcomm_runtime_cuda.so"
try_backend "invalid ELF header" "on the loader's path"

cp "$incomplete" "$work/libgradcomm_runtime_cuda.so"
try_backend "libgradcomm_runtime_cuda.so's table has no 'forget' entry"
