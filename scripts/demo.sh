#!/usr/bin/env bash
# scripts/demo.sh - the GradComm main job, as far as it exists today.
#
# What this runs (and nothing more):
#   1. installs what is missing (Debian packages, the Fashion-MNIST dataset
#      included) and builds GradComm, as check.sh does;
#   2. shows the compiler: an annotated single-device SGD step through
#      --gradcomm-scalecom-pipeline, with the pass's report;
#   3. the main job (docs/design/architecture.md section 8): a 784-128-10 MLP on
#      Fashion-MNIST, 4 MPI ranks, its training step
#      (examples/fashion-mnist/step.mlir.in) compiled by gradcomm-compile once
#      per strategy: dense all-reduce, ScaleCom (CLT-k, ratio 100, exact
#      selection), ScaleCom with chunk selection and low-pass filter
#      (beta 0.5), local top-k + all-gather (ratio 100), gossip (matching,
#      mixing 0.5). Same seeds and hyper-parameters for all. Prints final
#      loss, test accuracy (averaged model and mean of the replicas), bytes
#      on the wire per step and time per step, and writes the loss curves to
#      demo-out/loss.svg;
#   4. a correctness check: the compiled ScaleCom linear-regression step
#      equals a C++ reference of ScaleCom bit for bit on 4 ranks.
#
# STEPS (default 300) sets the training length. Times on this 2-core machine
# are dominated by 4 MPI ranks sharing 2 cores; bytes are exact counts; one
# seed per strategy (no error bars).
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
steps=${STEPS:-300}

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
echo "== 2. Fashion-MNIST MLP, 4 ranks, $steps steps (global batch 128, lr 0.1)"
out=demo-out
mkdir -p "$out"
fm="$build/examples/fashion-mnist"
printf "%-18s %8s %10s %10s %14s %14s %10s\n" strategy loss "acc(avg)" \
  "acc(repl)" "value B/step" "index B/step" "ms/step"
plots=()
for strategy in dense scalecom scalecom-lowpass local-topk gossip; do
  line=$(/usr/bin/mpiexec.mpich -n 4 "$fm/fashion-mnist-$strategy" \
    --steps "$steps" --label "$strategy" --log "$out/$strategy.csv" |
    grep '^summary')
  field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
  printf "%-18s %8s %10s %10s %14s %14s %10s\n" "$strategy" "$(field loss)" \
    "$(field acc_averaged)" "$(field acc_replicas)" \
    "$(field value_bytes_per_step)" "$(field index_bytes_per_step)" \
    "$(field ms_per_step)"
  plots+=("$strategy=$out/$strategy.csv")
done
python3 scripts/lib/plot_losses.py "$out/loss.svg" "${plots[@]}"
echo
echo "(101,770 parameters, dense all-reduce: 2*4*101770*(n-1)/n = 610,620 B per"
echo " rank per step. ScaleCom/local top-k compress the two weight matrices"
echo " (k = N/100); biases stay dense. Loss curves: $out/loss.svg)"

echo
echo "== 3. correctness: compiled ScaleCom step vs C++ reference, 4 ranks"
/usr/bin/mpiexec.mpich -n 4 \
  "$build/examples/linear-regression/linear-regression-scalecom-exact-np4" \
  --steps 20 --reference scalecom --k 128 --quiet | tail -n 1
