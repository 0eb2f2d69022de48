#!/usr/bin/env bash
# The runtime's side of the CUDA backend without a GPU: a copy of the
# runtime with the host-memory stand-in (FakeCudaBackend.cpp) beside it as
# libgradcomm_runtime_cuda.so, driven by fake_cuda_backend.py.
# Usage: fake-cuda-backend.sh <mpiexec> <libgradcomm_runtime.so>
#          <fake backend library> <work dir>
set -euo pipefail
mpiexec=$1 runtime=$2 fake=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
cp "$runtime" "$work/libgradcomm_runtime.so"
cp "$fake" "$work/libgradcomm_runtime_cuda.so"
env -u LD_LIBRARY_PATH timeout 120 "$mpiexec" -n 1 "${GRADCOMM_PYTHON:-/usr/bin/python3}" \
  "$here/fake_cuda_backend.py" "$work" "$work"
