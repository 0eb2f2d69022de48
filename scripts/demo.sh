#!/usr/bin/env bash
# scripts/demo.sh - the GradComm main job, as far as it exists today.
#
# What this runs (and nothing more):
#   1. installs what is missing and builds GradComm (as check.sh does);
#   2. shows the compiler: an annotated single-device SGD step
#      (examples/graphs/linear_step.mlir) through --gradcomm-scalecom-pipeline,
#      with the pass's report;
#   3. trains the linear-regression example (examples/linear-regression) on
#      4 MPI ranks, its step compiled by gradcomm-compile once per strategy
#      (dense all-reduce, ScaleCom exact, ScaleCom chunk + low-pass filter,
#      local top-k + all-gather, gossip when built), and prints final loss,
#      bytes on the wire per step and time per step side by side.
#
# Not yet: the Fashion-MNIST MLP of ARCHITECTURE.md section 7 (the model is
# linear regression on generated data). Times on this 2-core machine are
# dominated by 4 MPI ranks sharing 2 cores; bytes are exact counts.
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
steps=${STEPS:-200}

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
gradcomm_install_packages "${GRADCOMM_DEMO_PACKAGES[@]}"

echo "== build"
mkdir -p "$build"
cmake -G Ninja -S . -B "$build" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_BUILD_TYPE=Release >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
ninja -C "$build" >/dev/null

echo
echo "== 1. the ScaleCom pipeline on an annotated single-device step"
"$build/bin/gradcomm-opt" examples/graphs/linear_step.mlir \
  --gradcomm-scalecom-pipeline="ratio=16 beta=0.5 report=true" \
  --mlir-print-op-on-diagnostic=false 2>&1 |
  grep -E "remark|gradcomm\.|shard\.all_reduce|func.func"

echo
echo "== 2. linear regression, 4 ranks, $steps steps, one compiled step per strategy"
lr="$build/examples/linear-regression"
printf "%-22s %12s %16s %16s %12s\n" strategy "final loss" "value B/step" \
  "index B/step" "ms/step"
for strategy in dense scalecom-exact scalecom-chunk local-topk gossip; do
  exe="$lr/linear-regression-$strategy-np4"
  [ -x "$exe" ] || continue
  out=$(/usr/bin/mpiexec.mpich -n 4 "$exe" --steps "$steps")
  loss=$(grep '^step' <<<"$out" | tail -n 1 | awk '{print $4}')
  values=$(sed -n 's/.*values \([0-9]*\), indices.*/\1/p' <<<"$out")
  indices=$(sed -n 's/.*indices \([0-9]*\) .*/\1/p' <<<"$out")
  ms=$(sed -n 's/time per step: \([0-9.]*\) ms/\1/p' <<<"$out")
  printf "%-22s %12s %16s %16s %12s\n" "$strategy" "$loss" "$values" \
    "$indices" "$ms"
done
echo
echo "(weight gradient: 64x32 = 2048 floats; ScaleCom and local top-k with"
echo " k = 128 (ratio 16); chunk: top-1 per 16, beta 0.5. Bias and loss stay"
echo " dense. Bytes per rank per step from the runtime's counters.)"
