#!/usr/bin/env bash
# bench/gpu/run.sh - the GPU check, for a machine with one NVIDIA GPU: build
# the CUDA side, run the GPU tests (also under compute-sanitizer) and the
# DDP hooks on CUDA tensors (test/Python/ddp_cuda.py), measure the kernels
# (docs/design/benchmarks.md) and the hooks' cost on a ResNet-18 step
# (bench/gpu/hook_step.py), all in under 8 minutes.
#
# It needs only what the GPU machine has (CUDA's nvcc, CMake, a C++
# compiler; NCCL from $NCCL_ROOT, the nvidia-nccl wheel that python3 finds,
# or the CUDA toolkit): no LLVM/MLIR (the compiler is off), no MPI (the
# one-process MPI stub, runtime/mpi-stub), no GoogleTest (the GPU tests use
# runtime/test/MiniTest.h).
#
# Every step runs under `timeout`, inside one overall deadline, and its
# status is recorded whatever happens; $OUT (default ./gpu-out) always gets
#   summary.txt  each step's status and time, the tests' "N passed" lines,
#                the figures
#   steps.csv    step,status,seconds,exit_code (after a failed test
#                step, one row per test rerun alone: kernel-tests/Suite.Test)
#   kernels.csv  each kernel as a fraction of a device-to-device copy;
#                exact selection beside torch.topk on the same data
#   nccl.csv     per-call time of a one-rank NCCL all-reduce
#   hook_step.csv  a ResNet-18 step with DDP's all-reduce and with
#                gradcomm's hooks on the CUDA backend (bench/gpu/hook_step.py)
#   logs.txt     every step's output
# Exit status 0 when no step failed or timed out.
#
# --dry-run (scripts/check.sh, on a machine without a GPU): the same build
# and link steps; the GPU steps report "skipped"; exit status 0 only when
# the build passed and nothing failed.
# --build-only: the configure and build steps alone, with no time limit of
# their own (check.sh builds ahead at the lowest priority, beside its
# tests; the dry run then finds the build done).
set -uo pipefail
cd "$(dirname "$0")/../.."

dry_run=0 build_only=0
[[ ${1:-} == --dry-run ]] && dry_run=1
[[ ${1:-} == --build-only ]] && build_only=1
out=${OUT:-$PWD/gpu-out}
build=${BUILD_DIR:-build-gpu}
budget=${GPU_CHECK_SECONDS:-450}
configure_limit=120 build_limit=300
((build_only)) && budget=100000 configure_limit=100000 build_limit=100000
mkdir -p "$out"
: >"$out/logs.txt"
echo "step,status,seconds,exit_code" >"$out/steps.csv"
export PATH=/usr/local/cuda/bin:$PATH
start=$SECONDS
failures=0

# step NAME LIMIT COMMAND...: runs COMMAND under timeout (LIMIT seconds, or
# what is left of the budget), logs it, records its status. Exit status 77
# is "skipped" (no GPU).
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - (SECONDS - start)))
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    echo "$name,not-run,0," >>"$out/steps.csv"
    echo "== $name: not run (the ${budget} s budget is spent)" | tee -a "$out/logs.txt"
    failures=$((failures + 1))
    return 1
  fi
  echo "== $name (limit ${limit} s): $*" >>"$out/logs.txt"
  local t0=$SECONDS rc=0
  timeout --kill-after=10 "$limit" "$@" >>"$out/logs.txt" 2>&1 || rc=$?
  local status=passed
  case $rc in
  0) ;;
  77) status=skipped ;;
  124 | 137) status=timeout ;;
  *) status=failed ;;
  esac
  [[ $status == failed || $status == timeout ]] && failures=$((failures + 1))
  echo "$name,$status,$((SECONDS - t0)),$rc" >>"$out/steps.csv"
  echo "== $name: $status after $((SECONDS - t0)) s (exit $rc)" | tee -a "$out/logs.txt"
  [[ $status == passed || $status == skipped ]]
}

# NCCL's root: $NCCL_ROOT, else the nvidia-nccl wheel's folder (lib/
# libnccl.so.2 and include/nccl.h inside it), else empty (CMake then looks
# beside the CUDA toolkit).
nccl_root() {
  if [[ -n ${NCCL_ROOT:-} ]]; then
    echo "$NCCL_ROOT"
    return
  fi
  python3 - 2>/dev/null <<'PY' || true
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for base in list(nvidia.__path__):
    for lib in sorted(glob.glob(os.path.join(base, "**", "libnccl.so*"), recursive=True)):
        root = os.path.dirname(os.path.dirname(lib))
        if os.path.exists(os.path.join(root, "include", "nccl.h")):
            print(root)
            raise SystemExit
PY
}

# isolate NAME BINARY: after a failed test step, reruns each of BINARY's
# tests in its own process (MiniTest's MINITEST_LIST and MINITEST_FILTER),
# so that one test's CUDA fault, which poisons the process's context, does
# not hide whether the tests after it pass. Each gets a NAME/Suite.Test row.
isolate() {
  local name=$1 binary=$2 test
  for test in $(MINITEST_LIST=1 "$binary" 2>/dev/null |
    grep -E '^[A-Za-z0-9_]+\.[A-Za-z0-9_]+$'); do
    step "$name/$test" 60 env MINITEST_FILTER="$test" "$binary" || true
  done
}

generator=Ninja
command -v ninja >/dev/null || generator="Unix Makefiles"
nccl=$(nccl_root)
echo "nccl root: ${nccl:-(CUDA toolkit)}; generator: $generator" >>"$out/logs.txt"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true; } >>"$out/logs.txt"

built=0
if step configure "$configure_limit" cmake -G "$generator" -S . -B "$build" \
  -DCMAKE_BUILD_TYPE=Release -DGRADCOMM_BUILD_COMPILER=OFF \
  -DGRADCOMM_MPI_STUB=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  ${nccl:+-DNCCL_ROOT="$nccl"} &&
  step build "$build_limit" cmake --build "$build" -j "$(nproc)" --target \
    gradcomm-minitest-self-test gradcomm-stub-runtime-tests \
    gradcomm-cuda-kernel-tests \
    gradcomm-cuda-backend-tests gradcomm_runtime_cuda gradcomm-gpu-bench; then
  built=1
fi
if ((build_only)); then
  ((built)) && exit 0
  exit 1
fi

if ((built)); then
  tests=$build/runtime/test
  # What runs here must not need MPICH (the GPU machine has none).
  step no-mpich 30 bash -c "! ldd $build/lib/*.so $tests/gradcomm-cuda-* | grep -i mpich"
  step minitest 30 "$tests/gradcomm-minitest-self-test"
  step stub-runtime 60 "$tests/gradcomm-stub-runtime-tests"
  step kernel-tests 120 "$tests/gradcomm-cuda-kernel-tests" ||
    isolate kernel-tests "$tests/gradcomm-cuda-kernel-tests"
  step backend-tests 120 "$tests/gradcomm-cuda-backend-tests" ||
    isolate backend-tests "$tests/gradcomm-cuda-backend-tests"
  step bench 150 "$build/bench/gradcomm-gpu-bench" "$out"
  if [[ -f $out/topk_input.f32 ]] &&
    python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    step torch-topk 60 python3 bench/gpu/topk.py "$out"
  else
    echo "torch-topk,skipped,0," >>"$out/steps.csv"
  fi
  rm -f "$out/topk_input.f32"
  # The DDP hooks on CUDA tensors against the CPU hooks, bit for bit
  # (test/Python/ddp_cuda.py), over this build's runtime.
  if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    # The source tree's package (nothing is installed on that machine).
    step torch-hooks 180 env PYTHONPATH="$PWD/python" \
      GRADCOMM_RUNTIME_LIBRARY="$PWD/$build/lib/libgradcomm_runtime.so" \
      python3 test/Python/ddp_cuda.py
    step hook-step 180 env PYTHONPATH="$PWD/python" \
      GRADCOMM_RUNTIME_LIBRARY="$PWD/$build/lib/libgradcomm_runtime.so" \
      python3 bench/gpu/hook_step.py "$out"
  else
    echo "torch-hooks,skipped,0," >>"$out/steps.csv"
    echo "hook-step,skipped,0," >>"$out/steps.csv"
  fi
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck; do
      step "$tool" 150 env GRADCOMM_GPU_TESTS_QUICK=1 compute-sanitizer \
        --tool "$tool" --error-exitcode 1 "$tests/gradcomm-cuda-kernel-tests"
    done
  else
    echo "memcheck,skipped,0," >>"$out/steps.csv"
    echo "racecheck,skipped,0," >>"$out/steps.csv"
  fi
fi

table() { column -s, -t <"$1" 2>/dev/null || cat "$1"; }
{
  echo "GPU check: $( ((dry_run)) && echo "dry run, ")$((SECONDS - start)) s"
  table "$out/steps.csv"
  echo
  # The tests' own lines, by step (the MiniTest self-test's expected
  # failures left out).
  awk '/^== / { step = $2 }
       step != "minitest" && /^[0-9]+ passed, [0-9]+ failed|^[0-9]+ cases|^no NVIDIA GPU|^FAIL|ERROR SUMMARY/ {
         print step ": " $0 }' "$out/logs.txt"
  for csv in kernels.csv nccl.csv hook_step.csv; do
    [[ -f $out/$csv ]] && { echo; echo "$csv:"; table "$out/$csv"; }
  done
} >"$out/summary.txt"
cat "$out/summary.txt"
((built && failures == 0))
