#!/usr/bin/env bash
# The pip package end to end: a wheel of the repository built as a machine
# without MLIR and CUDA builds it (the runtime alone), installed into a
# fresh virtual environment whose only torch is the distribution's
# (Debian's python3-torch 1.13 through --system-site-packages; nothing is
# downloaded), then, from outside the repository and with no PYTHONPATH:
# a 2-rank DDP step with the ScaleCom hook (hook_step.py: the package and
# its runtime come from the environment, the hook compresses, the ranks
# agree; under mpiexec, as torch 1.13's torchrun fails on Python 3.11) and
# the console script gradcomm-export.
# Usage: wheel.sh <python with scikit-build-core> <base python> <mpiexec> <work>
set -euo pipefail
build_python=$1 base_python=$2 mpiexec=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rm -rf "$work" && mkdir -p "$work/run"

echo "== wheel (runtime only)"
"$build_python" -m pip wheel -q --disable-pip-version-check --no-input \
  --no-build-isolation --no-deps -w "$work/dist" "$root" \
  --config-settings=build-dir="$work/build" \
  --config-settings=cmake.define.GRADCOMM_BUILD_COMPILER=OFF \
  --config-settings=cmake.define.GRADCOMM_ENABLE_CUDA=OFF \
  >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log"; exit 1; }
wheel=$(echo "$work"/dist/gradcomm-*.whl)
"$build_python" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
want = ["gradcomm/_libs/libgradcomm_runtime.so", "gradcomm/_install.py",
        "gradcomm/torch/ddp.py", "gradcomm/include/gradcomm/runtime.h"]
missing = [name for name in want if name not in names]
print("%s wheel: %d files%s" % ("FAIL" if missing else "ok", len(names),
      ", missing " + ", ".join(missing) if missing else ""))
sys.exit(1 if missing else 0)
PY

echo "== a fresh environment with the distribution's torch"
"$base_python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-input --no-index "$wheel"

echo "== a 2-rank DDP step from outside the repository"
cp "$here/hook_step.py" "$work/run/"
cd "$work/run"
env -u PYTHONPATH -u GRADCOMM_RUNTIME_LIBRARY -u GRADCOMM_PLAN \
  timeout 300 "$mpiexec" -n 2 "$work/venv/bin/python" hook_step.py
env -u PYTHONPATH "$work/venv/bin/gradcomm-export" --help |
  grep -q 'MODULE:FACTORY' && echo "ok: gradcomm-export --help"
