#!/usr/bin/env bash
# bench/peers/accuracy.sh - the peer comparison's curves to accuracy: every
# row of bench/peers/rows.sh trains the same model from the same seed, data
# order and hyper-parameters (SGD with momentum, a cosine learning rate, the
# same dense warm-up for GradComm's recipe and PowerSGD's start iteration),
# 2 ranks under torchrun, evaluated evenly through the run on a fixed subset
# of the test set and on all of it at the end. time_to_accuracy.py prices
# each curve with the step times bench/peers/run.sh measured on a link.
# The curves are trained where the machine allows (shared memory by
# default: the numerics do not depend on the link; --rate trains on the
# emulated nodes instead, and the curve's own clock is used). Root only
# for --rate; a benchmark, never a test (docs/results.md, "Against
# PyTorch's own compression").
#
#   bench/peers/accuracy.sh [options] [ROW...]
#     --model M        resnet18 (default) or lm
#     --steps N        steps per run (default 200)
#     --warmup W       dense steps first (default 20)
#     --optimizer O    sgd (default: lr 0.05, momentum 0.9) or adam (lr
#                      0.003; ScaleCom then runs without momentum
#                      correction); the same for every row
#     --lr L           instead of the optimizer's learning rate
#     --seeds "S..."   (default "1 2 3")
#     --evaluations E  evenly spaced (default 10)
#     --eval-subset N  test examples evaluated through the run (default
#                      2000; the lm: 1000 windows); all of them at the end
#     --jobs J         runs at once on shared memory (default 2: one run's
#                      evaluation leaves a core idle)
#     --rate R         train on the two emulated nodes at rate R instead
#                      (bench/cluster/netns.sh; runs one at a time)
#     --out DIR        (default bench-out/peers)
#     --keep           keep the curves already in DIR (a run cut short
#                      goes on where it stopped)
#   ROW: names from rows.sh (default: ddp bf16 powersgd2 powersgd4 gc-r100
#   gc-r100-bf16 gc-r400).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

model=resnet18 steps=200 warmup=20 seeds="1 2 3" evaluations=10 subset=""
jobs=2 rate=shm out=bench-out/peers keep=0 optimizer=sgd lr=""
while [ $# -gt 0 ]; do
  case "$1" in
  --model) model=$2; shift 2 ;;
  --steps) steps=$2; shift 2 ;;
  --warmup) warmup=$2; shift 2 ;;
  --seeds) seeds=$2; shift 2 ;;
  --optimizer) optimizer=$2; shift 2 ;;
  --lr) lr=$2; shift 2 ;;
  --evaluations) evaluations=$2; shift 2 ;;
  --eval-subset) subset=$2; shift 2 ;;
  --jobs) jobs=$2; shift 2 ;;
  --rate) rate=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  --keep) keep=1; shift ;;
  -h | --help) sed -n '2,35p' "$0"; exit 0 ;;
  -*) echo "accuracy.sh: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
done
# shellcheck source=bench/peers/rows.sh
source bench/peers/rows.sh
rows=("$@")
[ ${#rows[@]} -gt 0 ] ||
  rows=(ddp bf16 powersgd2 powersgd4 gc-r100 gc-r100-bf16 gc-r400)
check_rows "${rows[@]}" || exit 2
hyper=$(optimizer_flags "$optimizer" "$lr") || exit 2
for row in "${rows[@]}"; do
  # policy=auto picks its configuration from the link it is given: its
  # curve is that configuration's.
  [ "$row" != gc-auto ] || {
    echo "accuracy.sh: gc-auto trains as the row it picks (its plan names" \
      "it); give that row instead" >&2
    exit 2
  }
done
batch=$([ "$model" = lm ] && echo 16 || echo 32)
[ -n "$subset" ] || subset=$([ "$model" = lm ] && echo 1000 || echo 2000)

export GRADCOMM_RUNTIME_LIBRARY=${GRADCOMM_RUNTIME_LIBRARY:-$root/build/lib/libgradcomm_runtime.so}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tag=$(with_optimizer "accuracy-$model-$rate" "$optimizer")
[ "$keep" = 1 ] || rm -f "$out/$tag.failures"
# shellcheck disable=SC2206
common=(examples/pytorch/train_fmnist.py --model "$model" --batch "$batch"
  --steps "$steps" --epochs 1 $hyper --lr-schedule cosine
  --warmup-steps "$warmup"
  --evaluations "$evaluations" --eval-subset "$subset")
if [ "$rate" = shm ]; then
  launch() { "$root/.venv/bin/torchrun" --standalone --nproc-per-node=2 "$@"; }
else
  netns=bench/cluster/netns.sh
  trap 'bash $netns down' EXIT
  bash "$netns" up 2 "$rate"
  launch() { bash "$netns" torchrun 2 "$@"; }
  jobs=1
fi

# PowerSGD's curves train with DDP's gradients in one bucket. With two
# buckets or more, powerSGD_hook over gloo aborts most runs on shared
# memory (rows.sh: its second all-reduce, started from the first one's
# callback, races the next bucket's; 10 of 10 tries of two seeds failed
# here). Its numerics are per tensor: one bucket changes only which
# random numbers start its low-rank factors. Its step times (run.sh)
# are measured with DDP's own buckets.
declare -A CURVE_FLAGS=([powersgd1]="--bucket-cap-mb 1000"
  [powersgd2]="--bucket-cap-mb 1000" [powersgd4]="--bucket-cap-mb 1000")

# one_run ROW SEED: one curve, $out/$tag-ROW-sSEED.json.
one_run() {
  local row=$1 seed=$2 name
  name=$tag-$row-s$seed
  [ "$keep" = 1 ] && [ -e "$out/$name.json" ] && return 0
  # shellcheck disable=SC2046,SC2086
  run_row "$out/$tag.failures" "$out/$name.out" launch "${common[@]}" \
    $(row_flags "$row" "$optimizer") ${CURVE_FLAGS[$row]:-} --seed "$seed" \
    --label "$row" --json "$out/$name.json" ||
    { rm -f "$out/$name.json"; return 1; }
  grep -h '^summary' "$out/$name.out" | sed "s/^/$row seed $seed: /"
}
echo "accuracy: $model, 2 ranks, $rate, $steps steps, warm-up $warmup," \
  "$hyper, seeds $seeds, $jobs at once -> $out/$tag-*.json"
started=$(date +%s)
pids=() failed=0
for seed in $seeds; do
  for row in "${rows[@]}"; do
    one_run "$row" "$seed" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
      wait "${pids[0]}" || failed=$((failed + 1))
      pids=("${pids[@]:1}")
    fi
  done
done
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
echo "accuracy: $((($(date +%s) - started) / 60)) minutes; $failed runs" \
  "never finished"
cat "$out/$tag.failures"
[ "$failed" = 0 ]
