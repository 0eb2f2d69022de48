#!/usr/bin/env bash
# scripts/scalecom_study.sh - does ScaleCom keep its promise on real models?
# (issue #34; docs/results.md "ScaleCom on real models").
#
# Trains each model in MODELS with PyTorch DDP on 2 ranks (mpiexec.mpich,
# gloo) and GradComm's communication hooks, once per strategy and seed,
# with the same hyper-parameters for every strategy (SGD lr LR, momentum
# 0.9, cosine learning-rate decay to 0 over EPOCHS epochs, batch 32 per
# rank), then writes OUT/report.md with scripts/lib/study_report.py.
#
# Strategies: dense (the dense hook: DDP's all-reduce, bit for bit at 2
# ranks), ScaleCom at ratios 100, 400 and 1000 with the recipe (the
# defaults of gradcomm.torch.recipe.ScaleComOptions: beta 0.5, 100 dense
# warm-up steps; and momentum correction, which the trainer turns on by
# running SGD without momentum), ScaleCom 400 without the recipe (beta 1,
# no warm-up, no momentum correction: plain error feedback), local top-k
# at ratio 100, gossip, EASGD (synchronous, and asynchronous with the
# center on rank 0; moving rate 0.9). ABLATION=1 adds, for the CNN at ratio
# 400, the recipe with one part changed at a time.
#
# Sizes: MODELS="mlp cnn", SEEDS="1 2 3", EPOCHS=5 (about 50 minutes on 2
# cores with the ablation); LABELS="dense scalecom-r400" runs only those
# strategies (ResNet-18: MODELS=resnet18 EPOCHS=1 EVALUATIONS=2
# LABELS="dense scalecom-r100 scalecom-r400", about 50 minutes).
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${OUT:-study-out}
models=${MODELS:-"mlp cnn"}
seeds=${SEEDS:-"1 2 3"}
epochs=${EPOCHS:-5}
lr=${LR:-0.05}
ablation=${ABLATION:-1}
evaluations=${EVALUATIONS:-5}
labels=${LABELS:-}  # run only these strategies (labels below); all if empty

# shellcheck source=scripts/lib/python-env.sh
source scripts/lib/python-env.sh
gradcomm_python_env
python=$GRADCOMM_PYTHON
export GRADCOMM_RUNTIME_LIBRARY=$build/lib/libgradcomm_runtime.so
[ -f "$GRADCOMM_RUNTIME_LIBRARY" ] || {
  echo "scalecom_study.sh: build GradComm first (scripts/check.sh or ninja -C $build)" >&2
  exit 1
}

# label: train_fmnist.py options. The recipe's parts are switched off one
# at a time by giving the option its "off" value.
strategies=(
  "dense:--comm dense"
  "scalecom-r100:--comm scalecom --ratio 100 --momentum-correction 1"
  "scalecom-r400:--comm scalecom --ratio 400 --momentum-correction 1"
  "scalecom-r1000:--comm scalecom --ratio 1000 --momentum-correction 1"
  "scalecom-r400-no-recipe:--comm scalecom --ratio 400 --beta 1 --warmup-epochs 0 --momentum-correction 0"
  "local-topk-r100:--comm local-topk --ratio 100"
  "gossip:--comm gossip"
  "easgd:--comm easgd"
  "easgd-async:--comm easgd-async"
)
# The recipe at ratio 400 with one part changed: off (warm-up, beta,
# momentum correction), the ramp warm-up instead of the dense one, or
# local clipping added.
recipe="--comm scalecom --ratio 400 --momentum-correction 1"
ablations=(
  "ablation-r400-no-warmup:$recipe --warmup-epochs 0"
  "ablation-r400-beta-1:$recipe --beta 1"
  "ablation-r400-no-momentum-correction:$recipe --momentum-correction 0"
  "ablation-r400-ramp-warmup:$recipe --warmup ramp"
  "ablation-r400-clip-1:$recipe --clip 1"
)

rm -rf "$out" && mkdir -p "$out/runs"
start=$(date +%s)
logs=()
for model in $models; do
  runs=("${strategies[@]}")
  [ "$ablation" = 1 ] && [ "$model" = cnn ] && runs+=("${ablations[@]}")
  for entry in "${runs[@]}"; do
    label=${entry%%:*}
    if [ -n "$labels" ] && [[ " $labels " != *" $label "* ]]; then
      continue
    fi
    read -ra options <<<"${entry#*:}"
    for seed in $seeds; do
      log="$out/runs/$model-$label-seed$seed.json"
      /usr/bin/mpiexec.mpich -n 2 "$python" examples/pytorch/train_fmnist.py \
        --model "$model" "${options[@]}" --epochs "$epochs" --lr "$lr" \
        --lr-schedule cosine --evaluations "$evaluations" --seed "$seed" \
        --label "$label" --log "$log" | sed "s/^summary /  $model $label seed $seed: /"
      logs+=("$log")
    done
  done
done
elapsed=$(($(date +%s) - start))
"$python" scripts/lib/study_report.py "$out" --context "2 ranks (one per core,
$(nproc) cores), PyTorch DDP over gloo with GradComm's hooks; SGD lr $lr,
momentum 0.9 (applied by the hook under momentum correction), cosine decay to
0 over $epochs epochs, batch 32 per rank; seeds $seeds; mean +- sample sd of
the final test accuracy (10,000 images); bytes are measured by the runtime
per rank and step, warm-up included; wall time of all runs $elapsed s;
command: MODELS='$models' SEEDS='$seeds' EPOCHS=$epochs LR=$lr
ABLATION=$ablation scripts/scalecom_study.sh" "${logs[@]}"
echo "report: $out/report.md"
