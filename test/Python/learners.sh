#!/usr/bin/env bash
# The simulated learners (docs/learners.md) against real ranks, bit for bit:
#  1. the runtime's ops (test/Python/learners_ops.py) on 2 and 4 ranks;
#  2. examples/pytorch/train_fmnist.py --learners N against the same trainer
#     under mpiexec -n N with the hooks: the parameters after the last step
#     must be equal (the MLP and the CNN, whose batch norm follows DDP's
#     buffer rule; ScaleCom with the recipe, local top-k, dense);
#  3. the refusals: one learner, --learners under a launcher.
# Usage: learners.sh <python> <mpiexec> <runtime library> <work>
set -euo pipefail
python=$1 mpiexec=$2 library=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export GRADCOMM_RUNTIME_LIBRARY=$library
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
rm -rf "$work" && mkdir -p "$work"

for n in 2 4; do
  timeout 300 "$mpiexec" -n "$n" "$python" "$here/learners_ops.py"
done

trainer=$root/examples/pytorch/train_fmnist.py
same() { # <label> <ranks> <trainer args...>
  local label=$1 n=$2
  shift 2
  rm -f "$work/real.pt" "$work/simulated.pt"
  timeout 300 "$mpiexec" -n "$n" "$python" "$trainer" "$@" \
    --save "$work/real.pt" >"$work/$label.real.log" 2>&1 ||
    { cat "$work/$label.real.log" >&2; exit 1; }
  timeout 300 "$python" "$trainer" "$@" --learners "$n" \
    --save "$work/simulated.pt" >"$work/$label.simulated.log" 2>&1 ||
    { cat "$work/$label.simulated.log" >&2; exit 1; }
  "$python" - "$work/real.pt" "$work/simulated.pt" "$label" <<'PY'
import sys
import torch
real, simulated = torch.load(sys.argv[1]), torch.load(sys.argv[2])
differ = [k for k in real if not torch.equal(real[k], simulated[k])]
if differ or real.keys() != simulated.keys():
    sys.exit("learners: %s: %s differ from the real ranks'" % (
        sys.argv[3], ", ".join(differ) or "the keys"))
print("learners: %s: the real ranks' bits" % sys.argv[3])
PY
}
common=(--steps 12 --evaluations 1 --eval-subset 200 --ratio 100
        --lr-warmup-steps 3 --lr-schedule cosine)
recipe=(--comm scalecom --warmup-steps 3 --momentum-correction 1 --clip 5)
same mlp-scalecom-2 2 --model mlp "${common[@]}" "${recipe[@]}"
same mlp-scalecom-4 4 --model mlp "${common[@]}" "${recipe[@]}"
same cnn-scalecom-4 4 --model cnn "${common[@]}" "${recipe[@]}" \
  --selection chunk
same cnn-local-topk-4 4 --model cnn "${common[@]}" --comm local-topk
same cnn-dense-4 4 --model cnn "${common[@]}" --comm dense

refused() { # <expected message part> <command...>
  local expected=$1
  shift
  if "$@" >"$work/refused.log" 2>&1; then
    echo "learners: accepted: $*" >&2
    exit 1
  fi
  grep -q -- "$expected" "$work/refused.log" ||
    { cat "$work/refused.log" >&2; exit 1; }
}
refused "at least 2" "$python" "$trainer" --learners 1 --steps 1
refused "not under a multi-process launcher" \
  timeout 120 "$mpiexec" -n 2 "$python" "$trainer" --learners 2 --steps 1
refused "takes --comm dense, scalecom or local-topk" \
  "$python" "$trainer" --learners 2 --comm gossip --steps 1
echo "learners: all equal"
