#!/usr/bin/env bash
# scripts/gossip_study.sh - the three-way study of Jin et al. 2016
# (docs/gossip.md): synchronous all-reduce SGD, synchronous and
# asynchronous gossip, synchronous and asynchronous EASGD, and ScaleCom, on
# the Fashion-MNIST MLP (examples/fashion-mnist), at several group sizes,
# with no straggler and with one rank 2x and 4x slower, over several seeds.
#
# Every run trains for SECONDS of wall time (evaluated 8 times, at evenly
# spaced times, on 2000 test images), so a method whose fast ranks do not
# wait for a straggler takes more steps on them. Every rank sleeps
# COMPUTE_MS per step (a model whose compute takes that long; sleeping, so
# ranks sharing cores do not slow each other down) and the straggler (the
# last rank) FACTOR times its compute. Runs go to $OUT/runs, the table and
# plots to $OUT (scripts/lib/gossip_study.py).
#
# MODEL=cnn runs the Fashion-MNIST CNN of examples/pytorch/models.py
# instead: exported once per group size (gradcomm-export, batch 32, SGD
# momentum 0.9, lr 0.05; --local-loss for the asynchronous strategies, so
# their steps hold no collective), compiled per strategy, and trained by
# examples/pytorch/train.py with the same time budget, evaluations and
# stragglers (its evaluations do not count against the budget). Its compute
# is real, not slept: COMPUTE_MS defaults to 0 there, and a straggler
# sleeps (FACTOR - 1) times its fastest step.
#
# CLUSTER=RATE (root; e.g. 1gbit) runs every job on the emulated cluster of
# bench/cluster/netns.sh (one network namespace per rank, links shaped to
# RATE, MPICH over UCX tcp) instead of shared memory, and deletes the
# namespaces when it ends.
#
#   RANKS="4 8" SEEDS="1 2 3" SECONDS_PER_RUN=5 COMPUTE_MS=10
#   STRAGGLERS="1 2 4" STRATEGIES="dense gossip gossip-async easgd
#   easgd-async scalecom-r100-exact" OUT=study-out BUILD_DIR=build
#   EVAL_SAMPLES=2000 [MODEL=mlp|cnn] [CLUSTER=RATE] scripts/gossip_study.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ranks_list=${RANKS:-4 8}
seeds=${SEEDS:-1 2 3}
budget=${SECONDS_PER_RUN:-5}
eval_samples=${EVAL_SAMPLES:-2000}
model=${MODEL:-mlp}
case $model in
mlp) compute_ms=${COMPUTE_MS:-10} ;;
cnn) compute_ms=${COMPUTE_MS:-0} ;;
*) echo "gossip_study.sh: MODEL must be mlp or cnn, got '$model'" >&2; exit 2 ;;
esac
stragglers=${STRAGGLERS:-1 2 4}
strategies=${STRATEGIES:-dense gossip gossip-async easgd easgd-async scalecom-r100-exact}
out=${OUT:-study-out}
build=${BUILD_DIR:-build}
fm="$build/examples/fashion-mnist"
mkdir -p "$out/runs"

# compile_flags <strategy>: the gradcomm-compile options of a study name.
compile_flags() {
  case $1 in
  dense | gossip | gossip-async | easgd | easgd-async) echo "--strategy=$1" ;;
  easgd-sharded) echo "--strategy=easgd-async --center=sharded" ;;
  scalecom-r*-*)
    local rest=${1#scalecom-r}
    # Plain ScaleCom, as docs/gossip.md's figures were measured (not the
    # recipe gradcomm-compile now defaults to).
    echo "--strategy=scalecom --ratio=${rest%%-*} --selection=${rest#*-}" \
      "--beta=1 --warmup-steps=0"
    ;;
  *) echo "gossip_study.sh: no CNN build for strategy '$1'" >&2; return 1 ;;
  esac
}
asynchronous() { case $1 in *-async | easgd-sharded) return 0 ;; esac; return 1; }

if [ "$model" = mlp ]; then
  targets=()
  for ranks in $ranks_list; do
    for strategy in $strategies; do
      targets+=("fashion-mnist-np$ranks-$strategy")
    done
  done
  ninja -C "$build" "${targets[@]}" >/dev/null
else
  # gradcomm-export is configured, not built: the build directory has it.
  ninja -C "$build" gradcomm-compile gradcomm_runtime >/dev/null
  steps="$out/steps"
  mkdir -p "$steps"
  for ranks in $ranks_list; do
    for loss in global local; do
      flag=()
      [ "$loss" = local ] && flag=(--local-loss)
      "$build/bin/gradcomm-export" examples/pytorch/models.py:cnn --batch 32 \
        --ranks "$ranks" --momentum 0.9 --lr 0.05 "${flag[@]}" \
        -o "$steps/cnn-np$ranks-$loss.mlir" 2>/dev/null
    done
    for strategy in $strategies; do
      loss=global
      asynchronous "$strategy" && loss=local
      # shellcheck disable=SC2046  # the flags are words
      "$build/bin/gradcomm-compile" "$steps/cnn-np$ranks-$loss.mlir" \
        -o "$steps/cnn-np$ranks-$strategy.so" --emit=shared \
        $(compile_flags "$strategy")
      cp "$steps/cnn-np$ranks-$loss.json" "$steps/cnn-np$ranks-$strategy.json"
    done
  done
fi

cluster=${CLUSTER:-}
if [ -n "$cluster" ]; then
  trap 'bash bench/cluster/netns.sh down >/dev/null 2>&1 || true' EXIT
fi

# launch <ranks> <command...>: on shared memory, or on the emulated cluster
# (whose run ends a job that printed its last evaluation but hangs in
# MPI_Finalize, openucx/ucx#8738).
launch() {
  local ranks=$1
  shift
  if [ -n "$cluster" ]; then
    DONE_PATTERN='^summary' timeout 300 \
      bash bench/cluster/netns.sh run "$ranks" "$@"
  else
    timeout 300 /usr/bin/mpiexec.mpich -n "$ranks" "$@"
  fi
}

# run_one <ranks> <strategy> <seed> <log> <trainer options...>
run_one() {
  local ranks=$1 strategy=$2 seed=$3 log=$4
  shift 4
  if [ "$model" = mlp ]; then
    launch "$ranks" "$fm/fashion-mnist-np$ranks-$strategy" --seed "$seed" \
      --log "$log" "$@"
  else
    launch "$ranks" "${GRADCOMM_PYTHON:-/usr/bin/python3}" examples/pytorch/train.py --model cnn \
      --library "$steps/cnn-np$ranks-$strategy.so" \
      --manifest "$steps/cnn-np$ranks-$strategy.json" --seed "$seed" \
      --log "$log" "$@"
  fi
}

start=$SECONDS
for ranks in $ranks_list; do
  if [ -n "$cluster" ]; then
    bash bench/cluster/netns.sh down >/dev/null 2>&1 || true
    bash bench/cluster/netns.sh up "$ranks" "$cluster" >/dev/null
  fi
  for factor in $stragglers; do
    straggler=()
    [ "$factor" != 1 ] && straggler=(--straggler "$((ranks - 1)):$factor")
    for strategy in $strategies; do
      # Asynchronous steps stop and evaluate by each rank's own clock.
      alone=()
      if asynchronous "$strategy"; then alone=(--stop-alone); fi
      for seed in $seeds; do
        log="$out/runs/np$ranks-x$factor-$strategy-seed$seed.csv"
        if ! run_one "$ranks" "$strategy" "$seed" "$log" \
          --time-budget "$budget" --eval-times 8 --eval-samples "$eval_samples" \
          --compute-ms "$compute_ms" "${straggler[@]}" "${alone[@]}" \
          --label "$strategy" >"$log.out" 2>&1; then
          echo "FAILED: np$ranks x$factor $strategy seed $seed ($log.out)"
          exit 1
        fi
        summary=$(sed -n 's/.*steps=\([^ ]*\).*acc_averaged=\([^ ]*\).*elapsed_s=\(.*\)/\1 steps (rank 0), acc \2, \3 s/p' "$log.out")
        [ -n "$summary" ] ||
          summary=$(grep '^eval ' "$log.out" | tail -n 1 | sed 's/^eval [^:]*: //')
        echo "np$ranks straggler x$factor $strategy seed $seed: $summary"
      done
    done
  done
done
echo "runs: $((SECONDS - start)) s"
"${GRADCOMM_PYTHON:-/usr/bin/python3}" scripts/lib/gossip_study.py "$out" --target 0.70 \
  --context "MODEL=$model CLUSTER=${cluster:-none} EVAL_SAMPLES=$eval_samples RANKS=\"$ranks_list\" SEEDS=\"$seeds\" SECONDS_PER_RUN=$budget COMPUTE_MS=$compute_ms STRAGGLERS=\"$stragglers\"; $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
