#!/usr/bin/env bash
# bench/peers/run.sh - GradComm's DDP hooks against what PyTorch ships
# (DDP's fp32 all-reduce, bf16_compress_hook, fp16_compress_hook,
# powerSGD_hook), in one trainer (examples/pytorch/train_fmnist.py: the same
# model, data order and hyper-parameters for every row), under torchrun on
# two emulated nodes (bench/cluster/netns.sh: one network namespace each,
# shaped with tc tbf). Every row records per step its wall and CPU time, its
# phases, the bytes node 0's link sent (the interface's counter) and, for
# GradComm's rows, where the hooks' time went; bench/peers/summarize.py
# prints the table of step times after every row's warm-up, as ratios to
# the rows beside it. Root; a benchmark, never a test (docs/performance.md,
# "Against PyTorch's own compression").
#
#   bench/peers/run.sh [options] [ROW...]
#     --model M     resnet18 (default) or lm (10.7M-parameter transformer)
#     --rate R      the link's rate, tc syntax (default 1gbit); "shm": no
#                   network, both ranks on this machine's shared memory
#                   (torchrun --standalone)
#     --steps N     steps per row (default 24)
#     --warmup W    dense steps before compression, for GradComm's recipe
#                   and PowerSGD's start_powerSGD_iter alike (default 4)
#     --batch B     per rank (default 32; the lm: 16)
#     --optimizer O sgd (default) or adam, as bench/peers/accuracy.sh
#     --seed S      (default 1)
#     --device D    cpu (default) or cuda: the model and buckets on each
#                   rank's GPU, the process group NCCL, GradComm's hooks on
#                   the runtime's CUDA backend (a GPU per rank: NCCL takes
#                   one rank per GPU; with --rate shm on a multi-GPU machine)
#     --out DIR     where the rows' JSON go (default bench-out/peers)
#   ROW: names from the list below (default: all of them); "solo" is one
#   rank alone, no communication at all (the limit).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

model=resnet18 rate=1gbit steps=24 warmup=4 batch="" seed=1 device=cpu
out=bench-out/peers optimizer=sgd
while [ $# -gt 0 ]; do
  case "$1" in
  --model) model=$2; shift 2 ;;
  --rate) rate=$2; shift 2 ;;
  --steps) steps=$2; shift 2 ;;
  --warmup) warmup=$2; shift 2 ;;
  --batch) batch=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --optimizer) optimizer=$2; shift 2 ;;
  --device) device=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  -h | --help) sed -n '2,34p' "$0"; exit 0 ;;
  -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
done
[ -n "$batch" ] || batch=$([ "$model" = lm ] && echo 16 || echo 32)

# shellcheck source=bench/peers/rows.sh
source bench/peers/rows.sh
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(solo "${ORDER[@]}")
SOLO_ALLOWED=1 check_rows "${rows[@]}" || exit 2
hyper=$(optimizer_flags "$optimizer") || exit 2

python=$root/.venv/bin/python
export GRADCOMM_RUNTIME_LIBRARY=${GRADCOMM_RUNTIME_LIBRARY:-$root/build/lib/libgradcomm_runtime.so}
netns=bench/cluster/netns.sh
mkdir -p "$out"
out=$(cd "$out" && pwd)
tag=$(with_optimizer "$model-$rate" "$optimizer")
rm -f "$out/$tag.failures"
# shellcheck disable=SC2206
common=(examples/pytorch/train_fmnist.py --model "$model" --batch "$batch"
  --steps "$steps" --epochs 1 --seed "$seed" $hyper
  --warmup-steps "$warmup" --evaluations 1 --device "$device")
# policy=auto's cluster is what a user would give it: the link calibrated
# with the project's own tool (latency, bandwidth, memory bandwidth and
# kernel times, measured over MPI on the same link).
calibration=$out/$model-$rate.calibration
calibrate=$root/build/bench/calibrate/gradcomm-calibrate
if [ "$rate" = shm ]; then
  launch() { "$root/.venv/bin/torchrun" --standalone --nproc-per-node=2 "$@"; }
  solo() { env OMP_NUM_THREADS=1 "$python" "$@"; }
  /usr/bin/mpiexec.mpich -n 2 "$calibrate" "$calibration" >/dev/null
else
  trap 'bash $netns down' EXIT
  bash "$netns" up 2 "$rate"
  launch() { bash "$netns" torchrun 2 "$@"; }
  # One rank alone in node 0's namespace, so the counter still reads.
  solo() { ip netns exec gcr0 env OMP_NUM_THREADS=1 "$python" "$@"; }
  DONE_PATTERN='^bcast  *67108864' bash "$netns" run 2 "$calibrate" \
    "$calibration" >/dev/null
  common+=(--link-counter eth0)
fi
echo "peers: $model, 2 ranks, link $rate, $steps steps, warm-up $warmup," \
  "batch $batch per rank -> $out/$tag-*.json"
for row in "${rows[@]}"; do
  json=$out/$tag-$row.json
  log=$out/$tag-$row.out
  if [ "$row" = solo ]; then
    # One rank alone (no process group peers, no communication): the
    # step's limit.
    solo "${common[@]}" --comm ddp --label solo --json "$json" >"$log" 2>&1 ||
      { cat "$log"; exit 1; }
  else
    extra=()
    [ "$row" = gc-auto ] && extra=(--cluster "calibration=$calibration")
    # A failed row is run again, up to 5 times (rows.sh); the failures
    # are counted in $tag.failures, and a row that never finished is left
    # out of the table.
    # shellcheck disable=SC2046,SC2086
    run_row "$out/$tag.failures" "$log" launch "${common[@]}" \
      $(row_flags "$row" "$optimizer") "${extra[@]}" --label "$row" \
      --json "$json" ||
      { rm -f "$json"; continue; }
  fi
  "$python" bench/peers/summarize.py --warmup "$warmup" "$json" | tail -n 1
done
"$python" bench/peers/summarize.py --warmup "$warmup" \
  "$out/$tag"-*.json
cat "$out/$tag.failures" 2>/dev/null || true
