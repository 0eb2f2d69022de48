#!/usr/bin/env bash
# scripts/demo.sh - the GradComm main job, as far as it exists today.
#
# What this runs now (and nothing more):
#   1. installs what is missing and builds GradComm (as check.sh does);
#   2. compiles an annotated single-device SGD step
#      (examples/graphs/linear_step.mlir) with --gradcomm-scalecom-pipeline:
#      upstream partitioning, then the ScaleCom rewrite, with its report;
#   3. parses, verifies and prints a hand-written gradcomm exchange
#      (examples/graphs/scalecom_step.mlir), and shows a bad op rejected;
#   4. runs the runtime's dense all-reduce on 4 MPI ranks.
#
# Not yet: the Fashion-MNIST training comparison of ARCHITECTURE.md section 7
# (it needs the rewrite passes, the lowering and the ScaleCom/gossip runtime).
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
gradcomm_install_packages "${GRADCOMM_DEMO_PACKAGES[@]}"

echo "== build"
mkdir -p "$build"
cmake -G Ninja -S . -B "$build" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_BUILD_TYPE=Release >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
ninja -C "$build" gradcomm-opt gradcomm-runtime-tests >/dev/null

echo
echo "== 1. ScaleCom pipeline on an annotated single-device step (ratio 16, beta 0.5)"
"$build/bin/gradcomm-opt" examples/graphs/linear_step.mlir \
  --gradcomm-scalecom-pipeline="ratio=16 beta=0.5 report=true" \
  --mlir-print-op-on-diagnostic=false 2>&1 |
  grep -E "remark|gradcomm\.|shard\.all_reduce|func.func"

echo
echo "== 2. a hand-written gradient exchange in the gradcomm dialect, verified"
"$build/bin/gradcomm-opt" examples/graphs/scalecom_step.mlir

echo
echo "== 3. a bad op is rejected (beta must lie in (0, 1])"
sed 's/beta = 0.5/beta = 1.5/' examples/graphs/scalecom_step.mlir |
  "$build/bin/gradcomm-opt" 2>&1 | head -n 3 || true

echo
echo "== 4. runtime dense all-reduce on 4 MPI ranks"
/usr/bin/mpiexec.mpich -n 4 "$build/runtime/test/gradcomm-runtime-tests" \
  --gtest_filter='DenseAllReduce.*' --gtest_brief=1 2>&1 | tail -n 3
