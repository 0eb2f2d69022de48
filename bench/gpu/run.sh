#!/usr/bin/env bash
# bench/gpu/run.sh - for a machine with one GPU: build, run the GPU tests,
# measure (docs/design/benchmarks.md, one GPU), in a few minutes. CSV files go to $OUT
# (or ./gpu-out): kernels.csv (each kernel as a fraction of a device-to-device
# copy; exact selection beside torch.topk on the same data), nccl.csv (per-call
# overhead of a one-rank NCCL all-reduce), tests.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
build=${BUILD_DIR:-build-gpu}
cmake -G Ninja -S . -B "$build" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/configure.log" 2>&1
ninja -C "$build" gradcomm-cuda-kernel-tests gradcomm-cuda-backend-tests \
  gradcomm_runtime_cuda gradcomm-gpu-bench >"$out/build.log" 2>&1
"$build/runtime/test/gradcomm-cuda-kernel-tests" 2>&1 | tee "$out/tests.txt" | tail -n 3
/usr/bin/mpiexec.mpich -n 1 "$build/runtime/test/gradcomm-cuda-backend-tests" 2>&1 |
  tee -a "$out/tests.txt" | tail -n 3
"$build/bench/gradcomm-gpu-bench" "$out"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  python3 bench/gpu/topk.py "$out"
else
  echo "torch with CUDA not available: torch.topk comparison skipped" | tee -a "$out/tests.txt"
fi
rm -f "$out/topk_input.f32"
cat "$out/kernels.csv" "$out/nccl.csv"
