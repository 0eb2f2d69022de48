#!/usr/bin/env bash
# scripts/check.sh - install what is missing, build, run every test, check
# formatting. Ends with one line "N passed, N failed, N skipped" (skipped =
# UNSUPPORTED lit tests and skipped ctest tests, e.g. GPU tests on a machine
# without a GPU) and exits non-zero on any failure.
#
# Environment: BUILD_DIR (default build), JOBS (default nproc),
#              GRADCOMM_SKIP_INSTALL=1 to never call apt-get.
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
build=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
gradcomm_install_packages "${GRADCOMM_CHECK_PACKAGES[@]}"

echo "== configure ($build)"
mkdir -p "$build"
cmake -G Ninja -S . -B "$build" \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_BUILD_TYPE=Release >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }

echo "== build"
ninja -C "$build" -j "$jobs" all gradcomm-doc

results="$build/test-results"
rm -rf "$results" && mkdir -p "$results"

echo "== lit"
lit_rc=0
/usr/lib/llvm-22/bin/lit -sv -j "$jobs" --xunit-xml-output "$results/lit.xml" \
  "$build/test" || lit_rc=$?

echo "== ctest"
ctest_rc=0
(cd "$build" && ctest --output-on-failure -j "$jobs" \
  --output-junit "$root/$results/ctest.xml") || ctest_rc=$?

# The runtime and its MPI tests again under ASan + UBSan (a runtime-only
# build: no compiler, no CUDA). Leak checking is off: MPICH keeps
# allocations until exit on purpose.
echo "== sanitizers (runtime: ASan + UBSan)"
sanitize_build="$build-sanitize"
sanitize_rc=0
cmake -G Ninja -S . -B "$sanitize_build" -DGRADCOMM_BUILD_COMPILER=OFF \
  -DGRADCOMM_ENABLE_CUDA=OFF -DGRADCOMM_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$sanitize_build.configure.log" 2>&1 ||
  { cat "$sanitize_build.configure.log"; exit 1; }
ninja -C "$sanitize_build" -j "$jobs" >/dev/null
(cd "$sanitize_build" &&
  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j "$jobs" \
    --output-junit "$root/$results/ctest-sanitize.xml") || sanitize_rc=$?

echo "== format"
format_rc=0
mapfile -t sources < <(git ls-files '*.cpp' '*.h' '*.cu' '*.c')
if [ "${#sources[@]}" -gt 0 ]; then
  clang-format --dry-run -Werror "${sources[@]}" || format_rc=$?
fi
format_failed=$([ "$format_rc" -eq 0 ] && echo 0 || echo 1)

python3 scripts/lib/summarize_junit.py "$format_failed" \
  "$results/lit.xml" "$results/ctest.xml" "$results/ctest-sanitize.xml"
summary_rc=$?
[ "$lit_rc" -eq 0 ] && [ "$ctest_rc" -eq 0 ] && [ "$sanitize_rc" -eq 0 ] &&
  [ "$format_rc" -eq 0 ] && [ "$summary_rc" -eq 0 ]
