#!/usr/bin/env bash
# bench/learners/study.sh - ScaleCom from 2 to 64 learners (docs/results.md,
# "From 2 to 64 learners"). Every run is examples/pytorch/train_fmnist.py
# --learners N: N data-parallel learners simulated in one process over the
# runtime's own kernels and recipe (docs/learners.md; the same bits as N
# ranks, python.learners.np4). The per-learner batch is fixed (32), so the
# global batch grows with N as in the paper; the learning rate follows the
# linear scaling rule, lr = 0.1 * 32 N / 256, reached by a linear warm-up
# over the first epoch and then a cosine, the same for every strategy; the
# same epochs at every N (fewer steps as N grows). summarize.py makes the
# tables and plots. A benchmark, never a test.
#
#   bench/learners/study.sh [options] [STRATEGY...]
#     --model M        mlp, cnn or resnet18-narrow (ResNet-18 at an eighth
#                      of the width; default cnn)
#     --learners "N.." (default "2 8 16 32 64")
#     --epochs E       (default 4)
#     --seeds "S..."   (default "1 2 3")
#     --jobs J         runs at once (default 2)
#     --out DIR        (default bench-out/learners)
#     --keep           keep the runs already in DIR
#   STRATEGY: dense, r100, r400 (ScaleCom with the recipe: momentum
#   correction, beta 0.5, a dense warm-up of a quarter epoch), r100-beta1,
#   r400-beta1 (the same without the low-pass filter), r100-ramp, r400-ramp,
#   r100-ramp-beta1 (the same with the ratio rising geometrically from 4 to
#   its target over the first 2 epochs instead: DGC's warm-up),
#   r100-ramp-beta01, r400-ramp-beta01 (a stronger filter, beta 0.1),
#   r100-ramp4-beta01, r400-ramp4-beta01 (the same, ramped over 4 epochs),
#   r100-ramp4-beta1 (ramped over 4 epochs without the filter),
#   r100-ramp4-betaauto, r400-ramp4-betaauto (the same with beta "auto":
#   1/N, at least 0.1),
#   topk100 (local top-k at ratio 100, as local_topk_hook ships: no warm-up,
#   SGD's momentum). Default: dense r100-ramp r400-ramp r100-ramp-beta1 topk100.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

model=cnn learners="2 8 16 32 64" epochs=4 seeds="1 2 3" jobs=2
out=bench-out/learners keep=0
while [ $# -gt 0 ]; do
  case "$1" in
  --model) model=$2; shift 2 ;;
  --learners) learners=$2; shift 2 ;;
  --epochs) epochs=$2; shift 2 ;;
  --seeds) seeds=$2; shift 2 ;;
  --jobs) jobs=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  -h | --help) sed -n '2,33p' "$0"; exit 0 ;;
  -*) echo "study.sh: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
done
declare -A STRATEGIES=(
  [dense]="--comm dense"
  [r100]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup-epochs 0.25"
  [r400]="--comm scalecom --ratio 400 --momentum-correction 1 --warmup-epochs 0.25"
  [r100-beta1]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup-epochs 0.25 --beta 1"
  [r400-beta1]="--comm scalecom --ratio 400 --momentum-correction 1 --warmup-epochs 0.25 --beta 1"
  [r100-ramp]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup ramp --warmup-epochs 2"
  [r400-ramp]="--comm scalecom --ratio 400 --momentum-correction 1 --warmup ramp --warmup-epochs 2"
  [r100-ramp-beta1]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup ramp --warmup-epochs 2 --beta 1"
  [r100-ramp-beta01]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup ramp --warmup-epochs 2 --beta 0.1"
  [r400-ramp-beta01]="--comm scalecom --ratio 400 --momentum-correction 1 --warmup ramp --warmup-epochs 2 --beta 0.1"
  [r100-ramp4-beta01]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup ramp --warmup-epochs 4 --beta 0.1"
  [r400-ramp4-beta01]="--comm scalecom --ratio 400 --momentum-correction 1 --warmup ramp --warmup-epochs 4 --beta 0.1"
  [r100-ramp4-beta1]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup ramp --warmup-epochs 4 --beta 1"
  [r100-ramp4-betaauto]="--comm scalecom --ratio 100 --momentum-correction 1 --warmup ramp --warmup-epochs 4 --beta auto"
  [r400-ramp4-betaauto]="--comm scalecom --ratio 400 --momentum-correction 1 --warmup ramp --warmup-epochs 4 --beta auto"
  [topk100]="--comm local-topk --ratio 100")
strategies=("$@")
[ ${#strategies[@]} -gt 0 ] ||
  strategies=(dense r100-ramp r400-ramp r100-ramp-beta1 topk100)
for s in "${strategies[@]}"; do
  [ -n "${STRATEGIES[$s]:-}" ] ||
    { echo "study.sh: unknown strategy $s (${!STRATEGIES[*]})" >&2; exit 2; }
done
case "$model" in mlp | cnn | resnet18-narrow) ;; *)
  echo "study.sh: --model mlp, cnn or resnet18-narrow (ResNet-18 at full" \
    "width and 64 learners does not fit this machine's time:" \
    "docs/results.md)" >&2
  exit 2 ;;
esac

export GRADCOMM_RUNTIME_LIBRARY=${GRADCOMM_RUNTIME_LIBRARY:-$root/build/lib/libgradcomm_runtime.so}
mkdir -p "$out"
out=$(cd "$out" && pwd)
examples=60000 batch=32

# one_run STRATEGY N SEED: $out/$model-STRATEGY-nN-sSEED.json.
one_run() {
  local strategy=$1 n=$2 seed=$3 name per_epoch lr
  name=$model-$strategy-n$n-s$seed
  [ "$keep" = 1 ] && [ -e "$out/$name.json" ] && return 0
  per_epoch=$((examples / (batch * n)))
  lr=$(awk -v n="$n" -v b="$batch" 'BEGIN { printf "%g", 0.1 * b * n / 256 }')
  # shellcheck disable=SC2086
  "$root/.venv/bin/python" examples/pytorch/train_fmnist.py --model "$model" \
    --learners "$n" --batch "$batch" --epochs "$epochs" --lr "$lr" \
    --momentum 0.9 --lr-schedule cosine --lr-warmup-steps "$per_epoch" \
    --evaluations 8 --eval-subset 2000 --seed "$seed" ${STRATEGIES[$strategy]} \
    --label "$strategy" --json "$out/$name.json" >"$out/$name.out" 2>&1 ||
    { echo "study.sh: $name failed ($out/$name.out)" >&2
      rm -f "$out/$name.json"; return 1; }
  grep -h '^summary' "$out/$name.out" | sed "s/^/$strategy n=$n seed $seed: /"
}
echo "learners: $model, N in $learners, $epochs epochs, seeds $seeds," \
  "$jobs at once -> $out/$model-*.json"
started=$(date +%s)
pids=() failed=0
for seed in $seeds; do
  for n in $learners; do
    for strategy in "${strategies[@]}"; do
      one_run "$strategy" "$n" "$seed" &
      pids+=($!)
      if [ ${#pids[@]} -ge "$jobs" ]; then
        wait "${pids[0]}" || failed=$((failed + 1))
        pids=("${pids[@]:1}")
      fi
    done
  done
done
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
echo "learners: $model: $((($(date +%s) - started) / 60)) minutes;" \
  "$failed runs failed"
[ "$failed" = 0 ]
