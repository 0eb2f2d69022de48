#!/usr/bin/env bash
# scripts/check.sh - install what is missing, build, run every test, check
# formatting. Ends with one line "N passed, N failed, N skipped" (skipped =
# UNSUPPORTED lit tests and skipped ctest tests, e.g. GPU tests on a machine
# without a GPU) and exits non-zero on any failure.
#
# Environment: BUILD_DIR (default build), JOBS (default nproc),
#              GRADCOMM_SKIP_INSTALL=1 to never call apt-get,
#              GRADCOMM_VENV (default .venv: the Python environment made
#              from python/requirements.txt, scripts/lib/python-env.sh).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
# Each section's header says when it began (seconds since the start), so a
# run's log shows where its time went.
section() { echo "== $* [${SECONDS} s]"; }

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
gradcomm_install_packages "${GRADCOMM_CHECK_PACKAGES[@]}"
# shellcheck source=scripts/lib/python-env.sh
source scripts/lib/python-env.sh
# The Python environment is made (a minute or two of unpacking wheels on
# one core) beside the configure and build, which need only its path; the
# package is installed into it once both are done.
mkdir -p "$build"
(nice -n 10 bash -c 'source scripts/lib/python-env.sh && gradcomm_python_env') \
  >"$build/python-env.log" 2>&1 &
python_env_pid=$!
GRADCOMM_PYTHON=$(gradcomm_python_env_dir)/bin/python
export GRADCOMM_PYTHON

# One compiler, built with ASan + UBSan (GRADCOMM_SANITIZE_COMPILER: the
# compiler's own code instrumented, the runtime that Python loads not), so
# that lit, the fuzzer, the examples' builds and the Python tests all run
# the instrumented tools and no second compiler build is needed. Leak
# checking is off: MPICH and LLVM keep allocations until exit on purpose.
export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1
section "configure ($build)"
cmake -G Ninja -S . -B "$build" \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DGRADCOMM_PYTHON="$GRADCOMM_PYTHON" \
  -DGRADCOMM_SANITIZE_COMPILER=ON \
  -DCMAKE_BUILD_TYPE=Release >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }

# The runtime and its MPI tests again under ASan + UBSan (no CUDA, no
# compiler: the main build's compiler is the instrumented one; -O1 and line
# tables only), built from the start at the lowest priority, so that it
# takes what the main build, the Python environment, lit and ctest leave
# idle (the end of the build waiting for the environment, the tests'
# multi-rank waits), and run after the tests. The
# PyTorch and end-to-end tests are not repeated (python3 itself is not
# instrumented).
sanitize_build="$build-sanitize"
(
  cmake -G Ninja -S . -B "$sanitize_build" \
    -DGRADCOMM_BUILD_COMPILER=OFF \
    -DGRADCOMM_ENABLE_CUDA=OFF -DGRADCOMM_SANITIZE=ON \
    -DGRADCOMM_PYTHON="$GRADCOMM_PYTHON" \
    -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" \
    -DCMAKE_C_FLAGS="-O1 -g1" &&
    nice -n 19 ninja -C "$sanitize_build" -j "$jobs" gradcomm-runtime-tests \
      gradcomm-runtime-watchdog-test gradcomm-runtime-init-test \
      gradcomm-runtime-finalize-test gradcomm-runtime-rendezvous-test \
      gradcomm-runtime-transport-test gradcomm-kernel-tests \
      gradcomm-learners-tests gradcomm-minitest-self-test \
      gradcomm-blas-tests
) >"$sanitize_build.log" 2>&1 &
sanitize_build_pid=$!

# The GPU machine's build (bench/gpu/run.sh), also ahead at the lowest
# priority; the dry run after the tests then only checks it and runs what
# a machine without a GPU can.
has_nvcc=0
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then
  has_nvcc=1
  OUT="$build-gpu-dry-run-build" BUILD_DIR="$build-gpu-dry-run" \
    nice -n 19 bash bench/gpu/run.sh --build-only >/dev/null 2>&1 &
  gpu_build_pid=$!
fi

section "build"
ninja -C "$build" -j "$jobs" all gradcomm-doc
section "the Python environment (python/requirements.txt)"
wait "$python_env_pid" || { cat "$build/python-env.log"; exit 1; }
cat "$build/python-env.log"
section "the Python package, editable, into $GRADCOMM_PYTHON's environment"
gradcomm_install_package "$build"

results="$build/test-results"
rm -rf "$results" && mkdir -p "$results"

section "lit"
lit_rc=0
/usr/lib/llvm-22/bin/lit -sv -j "$jobs" --xunit-xml-output "$results/lit.xml" \
  "$build/test" || lit_rc=$?

# The runtime's multi-rank tests (label runtime-mpi) run once, under the
# sanitizers (below); the uninstrumented runtime they test is the one every
# Python and end-to-end test here loads.
section "ctest"
ctest_rc=0
(cd "$build" && ctest --output-on-failure -j "$jobs" -LE '^runtime-mpi$' \
  --output-junit "$root/$results/ctest.xml") || ctest_rc=$?

# The GPU machine's build (bench/gpu/run.sh: no MLIR, the one-process MPI
# stub, MiniTest), built and linked here with its GPU steps skipped, so the
# script works unchanged when a GPU is lent. Its build ran ahead (above);
# when that failed, the dry run's own build step reports why.
gpu_rc=0
if [ "$has_nvcc" -eq 1 ]; then
  wait "$gpu_build_pid" || true
  section "GPU check, dry run (bench/gpu/run.sh --dry-run)"
  OUT="$root/$results/gpu-dry-run" BUILD_DIR="$build-gpu-dry-run" \
    bash bench/gpu/run.sh --dry-run || gpu_rc=$?
else
  section "GPU check, dry run: skipped (no nvcc)"
fi

section "sanitizers (ASan + UBSan: the runtime's tests)"
sanitize_rc=0
wait "$sanitize_build_pid" || {
  sanitize_rc=$?
  echo "the sanitized build failed:"
  tail -n 50 "$sanitize_build.log"
}
[ "$sanitize_rc" -ne 0 ] ||
  (cd "$sanitize_build" &&
    ctest --output-on-failure -j "$jobs" -L runtime \
      --output-junit "$root/$results/ctest-sanitize.xml") || sanitize_rc=$?

section "format"
format_rc=0
mapfile -t sources < <(git ls-files '*.cpp' '*.h' '*.cu' '*.c')
if [ "${#sources[@]}" -gt 0 ]; then
  clang-format --dry-run -Werror "${sources[@]}" || format_rc=$?
fi
format_failed=$([ "$format_rc" -eq 0 ] && echo 0 || echo 1)

"$GRADCOMM_PYTHON" scripts/lib/summarize_junit.py "$format_failed" \
  "$results/lit.xml" "$results/ctest.xml" "$results/ctest-sanitize.xml"
summary_rc=$?
section "done"
[ "$lit_rc" -eq 0 ] && [ "$ctest_rc" -eq 0 ] && [ "$sanitize_rc" -eq 0 ] &&
  [ "$gpu_rc" -eq 0 ] &&
  [ "$format_rc" -eq 0 ] && [ "$summary_rc" -eq 0 ]
