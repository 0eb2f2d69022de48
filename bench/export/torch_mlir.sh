#!/usr/bin/env bash
# bench/export/torch_mlir.sh - torch-mlir's coverage of the model zoo's
# training steps (torch_mlir_coverage.py), in an environment of its own
# (.venv-torch-mlir: python/requirements.txt plus torch-mlir, pinned). A
# measurement, never a test; docs/design/torch-mlir.md has its results.
# Usage: bench/export/torch_mlir.sh [work dir] [MODEL...]
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-/tmp/gradcomm-torch-mlir}
shift || true
# shellcheck source=scripts/lib/python-env.sh
source scripts/lib/python-env.sh
GRADCOMM_VENV=${GRADCOMM_TORCH_MLIR_VENV:-$PWD/.venv-torch-mlir} \
  gradcomm_python_env bench/export/requirements-torch-mlir.txt
# That environment has no gradcomm installed: the source tree's package and
# the example zoo come from PYTHONPATH.
PYTHONPATH=$PWD/python:$PWD/examples/pytorch \
  "$GRADCOMM_PYTHON" bench/export/torch_mlir_coverage.py \
  /usr/lib/llvm-22/bin/mlir-opt "$work" "$@"
