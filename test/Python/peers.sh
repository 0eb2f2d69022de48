#!/usr/bin/env bash
# The peer comparison's harness (bench/peers): examples/pytorch/train_fmnist.py
# runs PyTorch's own hooks (bf16_compress_hook, fp16_compress_hook,
# powerSGD_hook with its warm-up) beside GradComm's in the same trainer,
# records per step its wall and CPU time and phases, and for GradComm's
# hooks where their time went; bench/peers/summarize.py turns the runs into
# the table. Checks the records' shape and meaning, not speed: every row
# runs its steps, the hooks' parts cover their buckets after the warm-up,
# PowerSGD really compresses after its start iteration (its gradients
# differ from DDP's), and the table has a row and ratios per run; the
# curves evaluated on a subset (--eval-subset) priced by
# bench/peers/time_to_accuracy.py give DDP its own target.
# Usage: peers.sh <python> <runtime library> <work>
set -euo pipefail
python=$1 library=$2 work=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
export GRADCOMM_RUNTIME_LIBRARY=$library
rm -rf "$work" && mkdir -p "$work"
# The small transformer on the GPL's text: no dataset package needed; one
# DDP bucket, so PowerSGD's two-thread race over gloo cannot arise.
common=(--model transformer --batch 8 --steps 6 --warmup-steps 2
  --evaluations 3 --eval-subset 300 --seed 2)
for row in ddp bf16 fp16 powersgd scalecom; do
  extra=()
  [ "$row" = powersgd ] && extra=(--powersgd-rank 1)
  timeout 300 "$(dirname "$python")/torchrun" --standalone --nproc-per-node=2 \
    "$root/examples/pytorch/train_fmnist.py" --comm "$row" "${common[@]}" \
    "${extra[@]}" --label "$row" --json "$work/$row.json" 2>&1 |
    grep '^summary'
done
"$python" - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
runs = {row: json.load(open(os.path.join(work, row + ".json")))
        for row in ("ddp", "bf16", "fp16", "powersgd", "scalecom")}
failures = []
for row, run in runs.items():
    timeline = run["timeline"]
    for phase in ("wall", "cpu", "forward", "backward", "optimizer"):
        if len(timeline[phase]) != 6 or min(timeline[phase]) <= 0:
            failures.append("%s: %s has %r" % (row, phase, timeline[phase]))
hooks = runs["scalecom"]["timeline"]["hooks"]
if len(hooks) != 6 or any(h.get("jobs", 0) < 1 for h in hooks):
    failures.append("scalecom: no hook jobs recorded per step: %r" % hooks)
if any(h.get("jobs") for h in runs["bf16"]["timeline"]["hooks"]):
    failures.append("bf16: GradComm's profile counted PyTorch's hook")
# The same data and seed: the warm-up steps are DDP's all-reduce, then
# PowerSGD's low-rank gradients train differently.
loss = {row: run["curve"][-1]["train_loss"] for row, run in runs.items()}
if loss["powersgd"] == loss["ddp"]:
    failures.append("powersgd trained exactly as DDP: %r" % loss)
if runs["powersgd"]["powersgd_rank"] != 1:
    failures.append("powersgd rank not recorded")
# --eval-subset: every point on the subset, the last on the whole set too.
for row, run in runs.items():
    curve = run["curve"]
    if ([p["step"] for p in curve] != [2, 4, 6]
            or any("subset_accuracy" not in p for p in curve)
            or any("test_accuracy" in p for p in curve[:-1])
            or not 0 < curve[-1]["test_accuracy"] < 1):
        failures.append("%s: curve %r" % (row, curve))
print("\n".join(failures) or "ok: %s" % loss)
sys.exit(1 if failures else 0)
PY
table=$("$python" "$root/bench/peers/summarize.py" --warmup 2 "$work"/*.json)
echo "$table"
rows=$(grep -c '^| \(ddp\|bf16\|fp16\|powersgd\|scalecom\) |' <<<"$table")
[ "$rows" -eq 5 ] || { echo "FAIL: $rows rows in the table" >&2; exit 1; }
# The ratio to DDP fp32 is 1.00 on DDP's own row.
grep -q '^| ddp |.*| 1.00 | - |' <<<"$table" ||
  { echo "FAIL: DDP's row is not its own reference" >&2; exit 1; }
# Time to accuracy: the runs as their own curves and their own prices.
for row in ddp bf16 fp16 powersgd scalecom; do
  cp "$work/$row.json" "$work/accuracy-transformer-shm-$row-s2.json"
  cp "$work/$row.json" "$work/transformer-test-$row.json"
done
tta=$("$python" "$root/bench/peers/time_to_accuracy.py" --run-warmup 2 \
  --price "test=$work" "$work"/accuracy-*.json)
echo "$tta"
# DDP reaches its own final accuracy minus 0.5 pt by its last point, and
# its final accuracy is its own reference.
grep -q '^| ddp | [0-9]* / [0-9]* | 1/1 | [246] | [0-9]* | [0-9]* | [-0-9.]* | [0-9.]* | +0.00 |' \
  <<<"$tta" || { echo "FAIL: DDP's time to accuracy" >&2; exit 1; }
[ "$(grep -c '^| \(bf16\|fp16\|powersgd\|scalecom\) |' <<<"$tta")" -eq 4 ] ||
  { echo "FAIL: rows missing from the time to accuracy" >&2; exit 1; }
echo ok
