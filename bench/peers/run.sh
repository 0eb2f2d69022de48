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
out=bench-out/peers
while [ $# -gt 0 ]; do
  case "$1" in
  --model) model=$2; shift 2 ;;
  --rate) rate=$2; shift 2 ;;
  --steps) steps=$2; shift 2 ;;
  --warmup) warmup=$2; shift 2 ;;
  --batch) batch=$2; shift 2 ;;
  --seed) seed=$2; shift 2 ;;
  --device) device=$2; shift 2 ;;
  --out) out=$2; shift 2 ;;
  -h | --help) sed -n '2,33p' "$0"; exit 0 ;;
  -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  *) break ;;
  esac
done
[ -n "$batch" ] || batch=$([ "$model" = lm ] && echo 16 || echo 32)

# label -> the trainer's communication flags.
declare -A ROWS=(
  [ddp]="--comm ddp"
  [bf16]="--comm bf16"
  [fp16]="--comm fp16"
  [powersgd1]="--comm powersgd --powersgd-rank 1"
  [powersgd2]="--comm powersgd --powersgd-rank 2"
  [powersgd4]="--comm powersgd --powersgd-rank 4"
  [gc-dense]="--comm dense"
  [gc-dense-bf16]="--comm dense --wire bf16"
  [gc-r100]="--comm scalecom --ratio 100"
  [gc-r100-bf16]="--comm scalecom --ratio 100 --wire bf16"
  [gc-r400]="--comm scalecom --ratio 400"
  [gc-r400-bf16]="--comm scalecom --ratio 400 --wire bf16"
  # Local top-k has no warm-up of its own (the hook refuses one); the
  # table reads steps after the others' warm-up in any case.
  [gc-topk-r100]="--comm local-topk --ratio 100 --warmup-steps 0"
  [gc-auto]="--comm scalecom --policy auto --wire bf16"
)
ORDER=(ddp bf16 fp16 powersgd1 powersgd2 powersgd4 gc-dense gc-dense-bf16
  gc-r100 gc-r100-bf16 gc-r400 gc-r400-bf16 gc-topk-r100 gc-auto)
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(solo "${ORDER[@]}")
for row in "${rows[@]}"; do
  [ "$row" = solo ] || [ -n "${ROWS[$row]:-}" ] ||
    { echo "run.sh: unknown row '$row' (rows: solo ${ORDER[*]})" >&2; exit 2; }
done

python=$root/.venv/bin/python
export GRADCOMM_RUNTIME_LIBRARY=${GRADCOMM_RUNTIME_LIBRARY:-$root/build/lib/libgradcomm_runtime.so}
netns=bench/cluster/netns.sh
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/$model-$rate.failures"
common=(examples/pytorch/train_fmnist.py --model "$model" --batch "$batch"
  --steps "$steps" --epochs 1 --seed "$seed" --lr 0.05 --momentum 0.9
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
tag="$model-$rate"
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
    # PowerSGD over gloo can fail: its hook and its futures' callbacks
    # start all-reduces from two threads, and when their order differs
    # between the ranks gloo aborts ("Received data size doesn't match
    # expected size") or resets the connection. A failed row is run again,
    # up to 5 times; the failures are counted in $tag.failures, and a row
    # that never finished is left out of the table.
    attempt=1 finished=1
    # shellcheck disable=SC2086
    until launch "${common[@]}" ${ROWS[$row]} \
      "${extra[@]}" --label "$row" --json "$json" >"$log" 2>&1; do
      grep -h "what()\|Connection reset" "$log" | head -n 1 >&2 || true
      if [ "$attempt" -ge 5 ]; then
        echo "run.sh: $row failed $attempt times; its output: $log" >&2
        rm -f "$json"
        finished=0
        break
      fi
      echo "run.sh: $row failed (attempt $attempt); running it again" >&2
      attempt=$((attempt + 1))
    done
    echo "$row: $((attempt - finished)) failed runs" >>"$out/$tag.failures"
    [ "$finished" = 1 ] || continue
  fi
  "$python" bench/peers/summarize.py --warmup "$warmup" "$json" | tail -n 1
done
"$python" bench/peers/summarize.py --warmup "$warmup" \
  "$out/$tag"-*.json
cat "$out/$tag.failures" 2>/dev/null || true
