#!/usr/bin/env bash
# bench/cluster/validate.sh - the cost model against the runtime's own
# operations on the emulated cluster (docs/scaling.md, "Validation"), as
# root: for each rank count, bench/cluster/netns.sh builds N namespaces
# with RATE links, gradcomm-calibrate measures them, and
# gradcomm-validate-model prints measured against predicted times. Deletes
# what it made on exit. A benchmark, never a test.
#
#   bench/cluster/validate.sh [build-dir] [ranks, default "2 4 8"]
#       environment: RATE (default 1gbit), SIZES (default 1000000,25000000),
#       REPS (default 3), OUT (default /tmp/gradcomm-validate)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
ranks=${2:-"2 4 8"}
rate=${RATE:-1gbit}
sizes=${SIZES:-1000000,25000000}
reps=${REPS:-3}
out=${OUT:-/tmp/gradcomm-validate}
mkdir -p "$out"
ninja -C "$build" gradcomm-calibrate gradcomm-validate-model >/dev/null
trap 'bash bench/cluster/netns.sh down' EXIT
for n in $ranks; do
  echo "== $n ranks, $rate links"
  bash bench/cluster/netns.sh up "$n" "$rate"
  DONE_PATTERN='^bcast *67108864' timeout 900 bash bench/cluster/netns.sh run "$n" \
    "$build/bench/calibrate/gradcomm-calibrate" "$out/cluster-$n.txt" |
    tee "$out/calibrate-$n.log"
  DONE_PATTERN='^done' timeout 1800 bash bench/cluster/netns.sh run "$n" \
    "$build/bench/calibrate/gradcomm-validate-model" "$out/cluster-$n.txt" \
    "$sizes" "$reps" | tee "$out/validate-$n.log"
done
