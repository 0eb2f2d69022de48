#!/usr/bin/env bash
# bench/compile/step_speed.sh - the compiled Fashion-MNIST MLP step (one
# rank, batch 32) against the same step in plain C++ -O3 -march=native,
# thread CPU time, alternating in one process (mlp_bench.cpp), for each
# --target-cpu given (default: native generic). A benchmark, never a test.
#
# Environment: BUILD_DIR (default build), STEPS (default 300),
#              TARGETS (default "native generic").
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${BUILD_DIR:-build}
steps=${STEPS:-300}
targets=${TARGETS:-"native generic"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sed 's/@RANKS@/1/g; s/@BATCH@/32/g' examples/fashion-mnist/step.mlir.in \
  >"$work/step.mlir"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
for target in $targets; do
  "$build/bin/gradcomm-compile" "$work/step.mlir" -o "$work/step.o" \
    --emit-header="$work/step.h" --strategy=dense --target-cpu="$target"
  g++ -std=c++17 -O3 -march=native -I"$work" -I"$root/runtime/include" \
    bench/compile/mlp_bench.cpp "$work/step.o" -o "$work/mlp_bench" \
    -L"$root/$build/lib" -lgradcomm_runtime -Wl,-rpath,"$root/$build/lib" \
    $(mpicc.mpich -show | grep -o -- '-[IL][^ ]*\|-lmpich') -lm
  echo "== gradcomm-compile --target-cpu=$target"
  "$work/mlp_bench" "$steps"
done
