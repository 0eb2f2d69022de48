#!/usr/bin/env bash
# examples/pytorch/train_fmnist.py launched by torchrun (no mpiexec: the
# runtime's MPI starts through the process group's store) trains as it
# does under mpiexec: for dense, ScaleCom (compressing from the first
# step), local top-k and gossip, the same seed gives the same training
# loss, test accuracy and bytes sent, at every evaluation.
# Usage: torchrun.sh <python> <mpiexec> <runtime library> <work>
set -euo pipefail
python=$1 mpiexec=$2 library=$3 work=$4
root=$(cd "$(dirname "$0")/../.." && pwd)
export GRADCOMM_RUNTIME_LIBRARY=$library
rm -rf "$work" && mkdir -p "$work"
# The transformer on the GPL's text: no dataset package needed.
common=(--model transformer --optimizer adam --lr 0.003 --epochs 0.015
  --evaluations 2 --seed 3)
for comm in dense scalecom local-topk gossip; do
  extra=()
  [ "$comm" = scalecom ] && extra=(--warmup-epochs 0)
  timeout 300 "$(dirname "$python")/torchrun" --standalone --nproc-per-node=2 \
    "$root/examples/pytorch/train_fmnist.py" --comm "$comm" "${common[@]}" \
    "${extra[@]}" --json "$work/torchrun-$comm.json" 2>&1 | grep '^summary'
  timeout 300 "$mpiexec" -n 2 "$python" "$root/examples/pytorch/train_fmnist.py" \
    --comm "$comm" "${common[@]}" "${extra[@]}" \
    --json "$work/mpiexec-$comm.json" | grep '^summary'
  "$python" - "$work/torchrun-$comm.json" "$work/mpiexec-$comm.json" <<'PY'
import json, sys
runs = [json.load(open(path)) for path in sys.argv[1:]]
curves = [[(point["step"], point["train_loss"], point["test_accuracy"],
            point["bytes"]) for point in run["curve"]] for run in runs]
same = curves[0] == curves[1] and len(curves[0]) == 2
print("%s %s: torchrun %s, mpiexec %s" % (
    "ok" if same else "FAIL", runs[0]["comm"], curves[0], curves[1]))
sys.exit(0 if same else 1)
PY
done
