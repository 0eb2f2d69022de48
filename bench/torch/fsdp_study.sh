#!/usr/bin/env bash
# Sharded training (FSDP, FULL_SHARD) on Fashion-MNIST: FSDP's own
# reduce-scatter, GradComm's dense reduce-scatter hook and ScaleCom's
# compressed one at ratios 100 and 1000, the same hyper-parameters for
# every strategy (those of scripts/scalecom_study.sh: SGD lr 0.05, momentum
# 0.9, cosine decay over EPOCHS epochs, batch 32 per rank; ScaleCom with the
# recipe's beta 0.5 and 100 dense warm-up steps), SEEDS seeds, 2 ranks
# under torchrun. Prints one table (mean +- sd of the final test accuracy,
# bytes per step) and keeps the runs' JSON in OUT.
# WRAP=model (default: one flat parameter, so one selection, for the whole
# model) or layer (one FSDP unit per Linear and Conv2d layer).
# WIRE=f32 (default), bf16 or f16: FSDP's MixedPrecision(reduce_dtype=...),
# so every strategy reduce-scatters 16-bit gradients (the hooks send them
# in 16 bits).
# SELECTION=flat (default: one selection per flat parameter) or tensor
# (per tensor inside it, tensors under 1024 values whole); LABELS limits
# the strategies (default "fsdp dense r100 r1000"; r400 is known too).
# RECIPE adds train_fmnist.py's recipe flags to the ScaleCom runs (for
# example "--momentum-correction 1 --dense vectors"), which are then named
# with RECIPE_NAME (required with RECIPE).
# FSDP_VERSION=1 (default: FullyShardedDataParallel and its comm hooks) or
# 2 (fully_shard and gradcomm.torch.fsdp2; SELECTION stays flat: FSDP2's
# selection is per parameter always); runs named with "fsdp2-" then.
# Usage: MODEL=mlp EPOCHS=5 SEEDS="1 2 3" WRAP=model WIRE=f32 OUT=dir \
#   bench/torch/fsdp_study.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${MODEL:-mlp} epochs=${EPOCHS:-5} seeds=${SEEDS:-"1 2 3"}
wrap=${WRAP:-model} wire=${WIRE:-f32} selection=${SELECTION:-flat}
labels=${LABELS:-"fsdp dense r100 r1000"}
recipe=${RECIPE:-}
version=${FSDP_VERSION:-1}
if [[ -n $recipe && -z ${RECIPE_NAME:-} ]]; then
  echo "fsdp_study.sh: RECIPE needs a RECIPE_NAME to name its runs" >&2
  exit 2
fi
# Runs are named by what changes them: the selection and the recipe only
# for ScaleCom.
tag=$wire
[[ $selection == tensor ]] && tag=$tag-tensor
[[ -n $recipe ]] && tag=$tag-$RECIPE_NAME
[[ $version == 2 ]] && tag=fsdp2-$tag
out=${OUT:-$root/build/fsdp-study}
python=${GRADCOMM_PYTHON:-$root/.venv/bin/python}
export GRADCOMM_RUNTIME_LIBRARY=${GRADCOMM_RUNTIME_LIBRARY:-$root/build/lib/libgradcomm_runtime.so}
mkdir -p "$out"
for seed in $seeds; do
  for label in $labels; do
    case $label in
      fsdp) comm=(--comm ddp) ;;
      dense) comm=(--comm dense) ;;
      r100) comm=(--comm scalecom --ratio 100) ;;
      r400) comm=(--comm scalecom --ratio 400) ;;
      r1000) comm=(--comm scalecom --ratio 1000) ;;
    esac
    # shellcheck disable=SC2206 # RECIPE is a list of flags
    [[ $label == r* ]] && comm+=($recipe)
    "$(dirname "$python")/torchrun" --standalone --nproc-per-node=2 \
      "$root/examples/pytorch/train_fmnist.py" --sharded --fsdp-wrap "$wrap" \
      --fsdp-version "$version" \
      "${comm[@]}" --wire "$wire" --fsdp-selection "$selection" \
      --model "$model" --epochs "$epochs" --lr 0.05 --momentum 0.9 \
      --lr-schedule cosine --seed "$seed" --evaluations 5 --label "$label" \
      --json "$out/$model-$wrap-$tag-$label-$seed.json" 2>&1 |
      grep '^summary'
  done
done
"$python" - "$out" "$model" "$wrap" "$tag" "$selection" <<'PY'
import glob, json, os, re, statistics, sys
out, model, wrap, wire, selection = sys.argv[1:6]
runs = {}
prefix = "%s-%s-%s-" % (model, wrap, wire)
for path in sorted(glob.glob("%s/%s*.json" % (out, prefix))):
    # "f32-*" also matches the "f32-tensor-*" runs: the rest must be
    # "<label>-<seed>.json".
    if not re.fullmatch(r"[a-z0-9]+-\d+\.json",
                        os.path.basename(path)[len(prefix):]):
        continue
    run = json.load(open(path))
    runs.setdefault(run["label"], []).append(run)
print("| %s, FSDP, wrap %s, %s | seeds | test accuracy | final ones | value + index bytes per step (rank 0) |" % (model, wrap, wire))
print("|---|---|---|---|---|")
for label in ("fsdp", "dense", "r100", "r400", "r1000"):
    group = runs.get(label, [])
    if not group:
        continue
    accuracy = [run["curve"][-1]["test_accuracy"] for run in group]
    sd = statistics.stdev(accuracy) if len(accuracy) > 1 else 0.0
    print("| %s | %d | %.4f +- %.4f | %s | %.0f + %.0f |" % (
        label, len(group), statistics.mean(accuracy), sd,
        " ".join("%.4f" % a for a in accuracy),
        group[0]["value_bytes_per_step"], group[0]["index_bytes_per_step"]))
PY
