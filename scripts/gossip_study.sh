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
#   RANKS="4 8" SEEDS="1 2 3" SECONDS_PER_RUN=5 COMPUTE_MS=10
#   STRAGGLERS="1 2 4" STRATEGIES="dense gossip gossip-async easgd
#   easgd-async scalecom-r100-exact" OUT=study-out BUILD_DIR=build
#   scripts/gossip_study.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ranks_list=${RANKS:-4 8}
seeds=${SEEDS:-1 2 3}
budget=${SECONDS_PER_RUN:-5}
compute_ms=${COMPUTE_MS:-10}
stragglers=${STRAGGLERS:-1 2 4}
strategies=${STRATEGIES:-dense gossip gossip-async easgd easgd-async scalecom-r100-exact}
out=${OUT:-study-out}
build=${BUILD_DIR:-build}
fm="$build/examples/fashion-mnist"
mkdir -p "$out/runs"

targets=()
for ranks in $ranks_list; do
  for strategy in $strategies; do
    targets+=("fashion-mnist-np$ranks-$strategy")
  done
done
ninja -C "$build" "${targets[@]}" >/dev/null

start=$SECONDS
for ranks in $ranks_list; do
  for factor in $stragglers; do
    straggler=()
    [ "$factor" != 1 ] && straggler=(--straggler "$((ranks - 1)):$factor")
    for strategy in $strategies; do
      # Asynchronous steps stop and evaluate by each rank's own clock.
      alone=()
      case $strategy in *-async) alone=(--stop-alone) ;; esac
      for seed in $seeds; do
        log="$out/runs/np$ranks-x$factor-$strategy-seed$seed.csv"
        if ! timeout 300 /usr/bin/mpiexec.mpich -n "$ranks" \
          "$fm/fashion-mnist-np$ranks-$strategy" --seed "$seed" \
          --time-budget "$budget" --eval-times 8 --eval-samples 2000 \
          --compute-ms "$compute_ms" "${straggler[@]}" "${alone[@]}" \
          --label "$strategy" --log "$log" >"$log.out" 2>&1; then
          echo "FAILED: np$ranks x$factor $strategy seed $seed ($log.out)"
          exit 1
        fi
        echo "np$ranks straggler x$factor $strategy seed $seed:" \
          "$(sed -n 's/.*steps=\([^ ]*\).*acc_averaged=\([^ ]*\).*elapsed_s=\(.*\)/\1 steps (rank 0), acc \2, \3 s/p' "$log.out")"
      done
    done
  done
done
echo "runs: $((SECONDS - start)) s"
/usr/bin/python3 scripts/lib/gossip_study.py "$out" --target 0.70 \
  --context "RANKS=\"$ranks_list\" SEEDS=\"$seeds\" SECONDS_PER_RUN=$budget COMPUTE_MS=$compute_ms STRAGGLERS=\"$stragglers\"; $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
