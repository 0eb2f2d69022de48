#!/usr/bin/env bash
# Installs GradComm into a scratch prefix, builds examples/ against it as an
# outside project would (find_package(GradComm), gradcomm_compile_step), and
# runs one of its trainers with its reference check; exports a PyTorch
# model with the installed gradcomm-export.
#   install-consumer.sh <build-dir> <examples-dir> <mpiexec> <scratch-dir>
set -euo pipefail
build=$1 examples=$2 mpiexec=$3 scratch=$4
rm -rf "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -G Ninja -S "$examples" -B "$scratch/build" \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" -DGRADCOMM_EXAMPLE_RANKS=2 >/dev/null
cmake --build "$scratch/build" --target linear-regression-scalecom-exact-np2 \
  >/dev/null
"$mpiexec" -n 2 "$scratch/build/linear-regression/linear-regression-scalecom-exact-np2" \
  --steps 5 --reference scalecom --quiet
# The installed exporter finds its package relative to itself, without
# PYTHONPATH, and what it writes compiles with the installed driver.
if "${GRADCOMM_PYTHON:-/usr/bin/python3}" -c "import torch" 2>/dev/null; then
  env -u PYTHONPATH "$scratch/prefix/bin/gradcomm-export" \
    "$examples/pytorch/models.py:mlp" --batch 2 --ranks 2 \
    -o "$scratch/mlp.mlir"
  "$scratch/prefix/bin/gradcomm-compile" "$scratch/mlp.mlir" \
    -o "$scratch/mlp.o" --strategy=scalecom
fi
# The installed CUDA backend (when built) resolves its CUDA and NCCL
# libraries wherever the runtime loads it from.
cuda_backend=$(find "$scratch/prefix" -name libgradcomm_runtime_cuda.so | head -1)
if [ -n "$cuda_backend" ]; then
  readelf -d "$cuda_backend" | grep -q 'R\(UN\)\?PATH' ||
    { echo "installed $cuda_backend has no RUNPATH"; exit 1; }
  if ldd "$cuda_backend" | grep -q 'not found'; then
    echo "installed $cuda_backend has unresolved libraries:"
    ldd "$cuda_backend" | grep 'not found'
    exit 1
  fi
fi
