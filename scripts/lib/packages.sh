# scripts/lib/packages.sh - Debian packages GradComm needs, and a helper that
# installs the missing ones (apt-get update first; nothing when all are
# present). Sourced by check.sh and demo.sh.

GRADCOMM_CHECK_PACKAGES=(
  cmake ninja-build g++ python3 python3-venv python3-matplotlib python3-numpy python3-torch
  python3-pytest git
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  mpich libmpich-dev libopenblas-serial-dev
  libgtest-dev libbenchmark-dev clang-format
  # The trainer tests (test_learners.py, test/Integration) read it.
  dataset-fashion-mnist
)

GRADCOMM_DEMO_PACKAGES=(
  "${GRADCOMM_CHECK_PACKAGES[@]}"
)

gradcomm_install_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "${GRADCOMM_SKIP_INSTALL:-0}" = 1 ]; then
    echo "missing packages (GRADCOMM_SKIP_INSTALL=1): ${missing[*]}" >&2
    return 1
  fi
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "== installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
}
