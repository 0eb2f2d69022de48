# shellcheck shell=bash
# scripts/lib/python-env.sh - the project's one Python environment: a
# virtual environment made from python/requirements.txt with Debian's
# /usr/bin/python3 (never the python3 first on PATH). Sourced by check.sh
# and demo.sh after gradcomm_install_packages.
#
# gradcomm_python_env [REQUIREMENTS]: makes the environment when it is
# missing or its requirements changed (a stamp holds the hash of
# REQUIREMENTS, default python/requirements.txt, and of that file, which
# another requirements file may include), then exports GRADCOMM_PYTHON, its
# interpreter. GRADCOMM_VENV overrides the place (default: .venv in the
# repository).

gradcomm_python_env() {
  local root requirements venv want
  root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
  requirements="$root/${1:-python/requirements.txt}"
  venv=$(gradcomm_python_env_dir)
  want=$(cat "$requirements" "$root/python/requirements.txt" | sha256sum |
    cut -d' ' -f1)
  if [ ! -x "$venv/bin/python" ] ||
    [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
    echo "== python environment: $venv (${1:-python/requirements.txt})"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
      --no-input -r "$requirements"
    echo "$want" >"$venv/.requirements.sha256"
  fi
  GRADCOMM_PYTHON="$venv/bin/python"
  export GRADCOMM_PYTHON
}

# gradcomm_python_env_dir: where gradcomm_python_env makes the environment
# (GRADCOMM_VENV, else .venv in the repository); its interpreter is
# bin/python there. check.sh configures and builds with that path while the
# environment is still being made: neither runs the interpreter.
gradcomm_python_env_dir() {
  echo "${GRADCOMM_VENV:-$(git -C "$(dirname "${BASH_SOURCE[0]}")" \
    rev-parse --show-toplevel)/.venv}"
}

# gradcomm_install_package BUILD_DIR: installs the repository's package
# (pyproject.toml) editable into GRADCOMM_PYTHON's environment over the
# already configured BUILD_DIR, with the compiler and the tests: the
# package then loads BUILD_DIR's runtime and tools, and `gradcomm-export`
# is a console script of the environment.
gradcomm_install_package() {
  local root build
  root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
  build=$(cd "$1" && pwd)
  "$GRADCOMM_PYTHON" -m pip install -q --disable-pip-version-check --no-input \
    --no-build-isolation --no-deps --editable "$root" \
    --config-settings=build-dir="$build" \
    --config-settings=cmake.define.GRADCOMM_BUILD_COMPILER=ON \
    --config-settings=cmake.define.GRADCOMM_BUILD_TESTS=ON \
    --config-settings=cmake.define.MLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    --config-settings=cmake.define.GRADCOMM_PYTHON="$GRADCOMM_PYTHON" >"$build/package.log" 2>&1 ||
    { cat "$build/package.log"; return 1; }
}
