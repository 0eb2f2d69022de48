#!/usr/bin/env bash
# bench/compile/export_models.sh - export and compile time of the example
# PyTorch models (examples/pytorch/models.py: mlp, cnn, transformer), batch
# 32 per rank, 4 ranks, SGD with momentum: gradcomm-export's CPU and wall
# time (Python start and torch import included) and gradcomm-compile's per
# phase (--time-phases), dense and ScaleCom, minimum of REPEAT runs.
# Figures go to docs/performance.md and docs/export.md. A benchmark, never
# a test.
#
# Environment: BUILD_DIR (default build), MODELS (default "mlp cnn
#              transformer"), REPEAT (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
models=${MODELS:-"mlp cnn transformer"}
repeat=${REPEAT:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

best() { # command... ; prints "cpu_s wall_s" of the fastest of $repeat runs
  local best_cpu="" best_wall="" i user sys wall cpu
  for ((i = 0; i < repeat; i++)); do
    /usr/bin/time -f "%U %S %e" -o "$work/time" "$@" 2>"$work/stderr" >/dev/null
    read -r user sys wall <"$work/time"
    cpu=$(echo "$user + $sys" | bc)
    if [ -z "$best_cpu" ] || (($(echo "$cpu < $best_cpu" | bc))); then
      best_cpu=$cpu best_wall=$wall
    fi
  done
  echo "$best_cpu $best_wall"
}

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores;" \
  "torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)')"
printf "%-12s %8s %8s %8s %10s %8s %8s %10s %10s\n" model params ops \
  export_s strategy mlir_s llvm_s compile_cpu compile_wall
for model in $models; do
  read -r export_cpu _ < <(best "$build/bin/gradcomm-export" \
    "examples/pytorch/models.py:$model" --batch 32 --ranks 4 \
    --momentum 0.9 -o "$work/$model.mlir")
  params=$(grep -c '"role": "parameter"' "$work/$model.json" || true)
  params=$((params / 2))
  ops=$(grep -c ' = linalg\.\| = tensor\.' "$work/$model.mlir" || true)
  for strategy in dense scalecom; do
    read -r cpu wall < <(best "$build/bin/gradcomm-compile" \
      "$work/$model.mlir" -o "$work/$model.o" --strategy=$strategy \
      --time-phases)
    "$build/bin/gradcomm-compile" "$work/$model.mlir" -o "$work/$model.o" \
      --strategy=$strategy --time-phases 2>"$work/phases"
    mlir=$(sed -n 's/gradcomm-compile: phase mlir-pipeline: \(.*\) s/\1/p' \
      "$work/phases" | head -n 1)
    llvm=$(sed -n 's/gradcomm-compile: phase llvm-[a-z]*: \(.*\) s/\1/p' \
      "$work/phases" | paste -sd+ | bc | xargs printf "%.2f")
    printf "%-12s %8s %8s %8s %10s %8s %8s %10s %10s\n" "$model" "$params" \
      "$ops" "$export_cpu" "$strategy" "${mlir:-?}" "${llvm:-?}" "$cpu" "$wall"
  done
done
