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
# at ratio 100, gossip (synchronous, matching; and asynchronous, random
# peers; mixing 0.5), EASGD (synchronous, and asynchronous with the center
# on rank 0; moving rate 0.9). ABLATION=1 adds, for the CNN at ratio
# 400, the recipe with one part changed at a time.
#
# The transformer language model (MODELS=transformer) trains with Adam at
# LM_LR (0.003) for LM_EPOCHS (10) epochs, the same for every strategy;
# momentum correction does not apply to Adam, so its recipe is beta 0.5
# and the dense warm-up.
#
# The compiled path: COMPILED_MODELS="cnn" (default none) also exports each
# of those models with gradcomm-export (2 ranks, batch 32, SGD lr LR,
# momentum 0.9 in the step: constant learning rate, no momentum
# correction), compiles it dense and with ScaleCom at ratios 100 and 400
# under gradcomm-compile's defaults (the recipe: beta 0.5, 100 dense
# warm-up steps) and trains each with examples/pytorch/train.py for EPOCHS
# epochs per seed (the transformer: Adam lr LM_LR, LM_EPOCHS epochs); its
# rows are the model "<model> (compiled)". The labels scalecom-r100-mc and
# scalecom-r400-mc (SGD models) export the step with plain SGD instead and
# compile it with --momentum=0.9: momentum correction, the velocity in the
# runtime. COMPILED_LABELS picks labels (default: all five).
# COMPILED_LR_SCHEDULE=cosine (default constant) exports the steps with
# --lr-input and has train.py decay the rate to 0 over the run, as the hook
# path's cosine schedule does. COMPILED_WARMUP_STEPS (default 100,
# gradcomm-compile's) sets the ScaleCom steps' dense warm-up; another value
# is named in their labels ("scalecom-r400-warmup494").
#
# FULL="run.json ..." names the logs of a longer run of the same study
# (docs/results/study/runs/): the report then says, per model and strategy,
# how far this run is from that one (scripts/demo.sh's short study does).
#
# Sizes: MODELS="mlp cnn", SEEDS="1 2 3", EPOCHS=5 (about 50 minutes on 2
# cores with the ablation); LABELS="dense scalecom-r400" runs only those
# strategies (ResNet-18: MODELS=resnet18 EPOCHS=1 EVALUATIONS=2
# LABELS="dense scalecom-r100 scalecom-r400", about 50 minutes; the
# transformer: MODELS=transformer, about 25 minutes).
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
out=${OUT:-study-out}
models=${MODELS:-"mlp cnn"}
[ "$models" = none ] && models="" # COMPILED_MODELS only
seeds=${SEEDS:-"1 2 3"}
epochs=${EPOCHS:-5}
lr=${LR:-0.05}
ablation=${ABLATION:-1}
evaluations=${EVALUATIONS:-5}
labels=${LABELS:-}  # run only these strategies (labels below); all if empty
compiled_models=${COMPILED_MODELS:-}
compiled_labels=${COMPILED_LABELS:-"dense scalecom-r100 scalecom-r400 scalecom-r100-mc scalecom-r400-mc"}
compiled_schedule=${COMPILED_LR_SCHEDULE:-constant}
compiled_warmup=${COMPILED_WARMUP_STEPS:-100} # gradcomm-compile's default
lm_lr=${LM_LR:-0.003}
lm_epochs=${LM_EPOCHS:-10}

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
  "gossip-async:--comm gossip-async"
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
    options=${entry#*:}
    model_options=(--epochs "$epochs" --lr "$lr")
    if [ "$model" = transformer ]; then
      options=${options/--momentum-correction 1/--momentum-correction 0}
      model_options=(--epochs "$lm_epochs" --lr "$lm_lr" --optimizer adam)
    fi
    read -ra options <<<"$options"
    for seed in $seeds; do
      log="$out/runs/$model-$label-seed$seed.json"
      /usr/bin/mpiexec.mpich -n 2 "$python" examples/pytorch/train_fmnist.py \
        --model "$model" "${options[@]}" "${model_options[@]}" \
        --lr-schedule cosine --evaluations "$evaluations" --seed "$seed" \
        --label "$label" --log "$log" | sed "s/^summary /  $model $label seed $seed: /"
      logs+=("$log")
    done
  done
done
for model in $compiled_models; do
  exported="$out/compiled/$model"
  mkdir -p "$exported"
  export_options=(--momentum 0.9 --lr "$lr") train_options=(--epochs "$epochs")
  model_lr=$lr
  if [ "$model" = transformer ]; then
    export_options=(--optimizer adam --lr "$lm_lr")
    train_options=(--epochs "$lm_epochs" --optimizer-options "")
    model_lr=$lm_lr
  fi
  lr_input=()
  if [ "$compiled_schedule" != constant ]; then
    lr_input=(--lr-input)
    train_options+=(--lr "$model_lr" --lr-schedule "$compiled_schedule")
  fi
  export_options+=("${lr_input[@]}")
  "$build/bin/gradcomm-export" "examples/pytorch/models.py:$model" --batch 32 \
    --ranks 2 "${export_options[@]}" -o "$exported/step.mlir"
  if [ "$model" != transformer ]; then
    "$build/bin/gradcomm-export" "examples/pytorch/models.py:$model" \
      --batch 32 --ranks 2 --momentum 0 --lr "$lr" "${lr_input[@]}" \
      -o "$exported/plain.mlir"
  fi
  for label in $compiled_labels; do
    ratio=${label#scalecom-r} ratio=${ratio%-mc} options=(--strategy=dense)
    [ "$label" = dense ] && ratio=0
    comm=${label%%-*} warmup=0 run_label=$label
    if [ "$comm" = scalecom ]; then
      options=(--strategy=scalecom --ratio="$ratio" --warmup-steps="$compiled_warmup")
      warmup=$compiled_warmup
      [ "$warmup" = 100 ] || run_label=$label-warmup$warmup
    fi
    step=step model_options=("${train_options[@]}")
    if [ "${label%-mc}" != "$label" ]; then
      [ "$model" = transformer ] && continue # Adam: no momentum correction
      step=plain options+=(--momentum=0.9)
      model_options+=(--optimizer-options "")
    fi
    "$build/bin/gradcomm-compile" "$exported/$step.mlir" --emit=shared \
      -o "$exported/$run_label.so" "${options[@]}"
    for seed in $seeds; do
      log="$out/runs/$model-compiled-$run_label-seed$seed.json"
      /usr/bin/mpiexec.mpich -n 2 "$python" examples/pytorch/train.py \
        --model "$model" --library "$exported/$run_label.so" \
        --manifest "$exported/$step.json" "${model_options[@]}" --seed "$seed" \
        --label "$run_label" --comm "$comm" --ratio "$ratio" \
        --warmup-steps "$warmup" --json "$log" |
        sed "s/^summary /  $model compiled $run_label seed $seed: /"
      logs+=("$log")
    done
  done
done
elapsed=$(($(date +%s) - start))
full_args=()
# shellcheck disable=SC2206 # FULL is a list of paths
[ -n "${FULL:-}" ] && full_args=(--full ${FULL})
"$python" scripts/lib/study_report.py "$out" "${full_args[@]}" --context "2 ranks (one per core,
$(nproc) cores), PyTorch DDP over gloo with GradComm's hooks; SGD lr $lr,
momentum 0.9 (applied by the hook under momentum correction), cosine decay to
0 over $epochs epochs, batch 32 per rank (compiled steps: lr schedule
$compiled_schedule, the momentum in the step unless -mc; the transformer: Adam lr $lm_lr,
$lm_epochs epochs, 16-character windows); seeds $seeds; mean +- sample sd of
the final test accuracy (10,000 images); bytes are measured by the runtime
per rank and step, warm-up included; wall time of all runs $elapsed s;
command: MODELS='$models' SEEDS='$seeds' EPOCHS=$epochs LR=$lr
LM_EPOCHS=$lm_epochs LM_LR=$lm_lr ABLATION=$ablation
COMPILED_MODELS='$compiled_models' COMPILED_LABELS='$compiled_labels'
COMPILED_LR_SCHEDULE=$compiled_schedule COMPILED_WARMUP_STEPS=$compiled_warmup
scripts/scalecom_study.sh" "${logs[@]}"
echo "report: $out/report.md"
