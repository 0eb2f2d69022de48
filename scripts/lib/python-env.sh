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
  venv=${GRADCOMM_VENV:-$root/.venv}
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
