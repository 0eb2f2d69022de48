#!/usr/bin/env bash
# bench/compile/run.sh - gradcomm-compile time against the number of
# parameters (docs/performance.md, "Compile time"). Generates SPMD steps
# with N gradient all-reduces (plain SGD, and with a matmul per parameter),
# compiles each with --strategy=scalecom and prints, per N, the wall time
# of each phase (--time-phases), the CPU time of the whole run, and the
# growth against the previous N. A benchmark, never a test.
#
# Environment: BUILD_DIR (default build), SIZES (default "10 100 1000"),
#              MATMUL_SIZES (default "10 100").
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
sizes=${SIZES:-"10 100 1000"}
matmul_sizes=${MATMUL_SIZES:-"10 100"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() { # kind n flags...
  local kind=$1 n=$2
  shift 2
  python3 bench/compile/gen_step.py "$n" "$@" >"$work/step.mlir"
  /usr/bin/time -f "%U %S %e" -o "$work/time" \
    "$build/bin/gradcomm-compile" "$work/step.mlir" -o "$work/step.o" \
    --strategy=scalecom --min-elements=0 --time-phases 2>"$work/phases"
  local phases
  phases=$(sed -n 's/gradcomm-compile: phase \(.*\): \(.*\) s/\2/p' \
    "$work/phases" | paste -sd' ')
  read -r user sys wall <"$work/time"
  printf "%-8s %6d %8s %10s %10s %10s %8.2f %8.2f\n" "$kind" "$n" $phases \
    "$(echo "$user + $sys" | bc)" "$wall"
}

echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
printf "%-8s %6s %8s %10s %10s %10s %8s %8s\n" kind N mlir_s translate_s \
  llvm_opt_s codegen_s cpu_s wall_s
for n in $sizes; do run sgd "$n"; done
for n in $matmul_sizes; do run matmul "$n" --matmul; done
