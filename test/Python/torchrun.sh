#!/usr/bin/env bash
# examples/pytorch/train_fmnist.py launched by torchrun (no mpiexec: the
# runtime's MPI starts through the process group's store) trains as it
# does under mpiexec: for dense, ScaleCom (compressing from the first
# step) and FSDP with the sharded ScaleCom hook (per tensor, the
# embeddings and the output layer kept dense by the presets), the same
# seed gives the same training loss, test accuracy and bytes sent, at
# every evaluation. (Local top-k and gossip come up through the same
# store; ddp_hook.py no-mpiexec runs the gossip averager that way.)
# Usage: torchrun.sh <python> <mpiexec> <runtime library> <work>
set -euo pipefail
python=$1 mpiexec=$2 library=$3 work=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
export GRADCOMM_RUNTIME_LIBRARY=$library
rm -rf "$work" && mkdir -p "$work"
# The transformer on the GPL's text: no dataset package needed.
common=(--model transformer --optimizer adam --lr 0.003 --epochs 0.015
  --evaluations 2 --seed 3)
for run in dense scalecom sharded; do
  comm=$run extra=()
  [ "$run" = scalecom ] && extra=(--warmup-epochs 0)
  [ "$run" = sharded ] && comm=scalecom extra=(--sharded --warmup-epochs 0
    --fsdp-selection tensor --dense embeddings,last)
  timeout 300 "$(dirname "$python")/torchrun" --standalone --nproc-per-node=2 \
    "$root/examples/pytorch/train_fmnist.py" --comm "$comm" "${common[@]}" \
    "${extra[@]}" --json "$work/torchrun-$run.json" 2>&1 | grep '^summary'
  timeout 300 "$mpiexec" -n 2 "$python" "$root/examples/pytorch/train_fmnist.py" \
    --comm "$comm" "${common[@]}" "${extra[@]}" \
    --json "$work/mpiexec-$run.json" | grep '^summary'
  "$python" - "$work/torchrun-$run.json" "$work/mpiexec-$run.json" "$run" <<'PY'
import json, sys
runs = [json.load(open(path)) for path in sys.argv[1:3]]
curves = [[(point["step"], point["train_loss"], point["test_accuracy"],
            point["bytes"]) for point in run["curve"]] for run in runs]
same = curves[0] == curves[1] and len(curves[0]) == 2
print("%s %s: torchrun %s, mpiexec %s" % (
    "ok" if same else "FAIL", sys.argv[3], curves[0], curves[1]))
sys.exit(0 if same else 1)
PY
done
