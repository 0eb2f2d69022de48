#!/usr/bin/env bash
# FinalizeByMpiTest.cpp on <ranks> ranks, with and without a rank's error,
# and with the progress thread the trainer asks for ("pumped"):
# every rank exits 0 and says so, and MPI's transport prints no warning
# (UCX's "not returned to mpool" and rcache assertions are what open
# windows at MPI_Finalize cause).
# Usage: finalize-by-mpi.sh <mpiexec> <ranks> <test executable>
set -euo pipefail
mpiexec=$1 ranks=$2 exe=$3
# Under the trainer's MPI the runtime starts its progress thread only when
# asked (GRADCOMM_ASYNC_PROGRESS=1), and the trainer then calls
# gradcomm_finalize first (docs/runtime.md, "The finalize contract").
for mode in clean error pumped; do
  log=$(mktemp)
  status=0
  progress=
  [ "$mode" = pumped ] && progress=1
  GRADCOMM_ASYNC_PROGRESS=$progress timeout 60 "$mpiexec" -n "$ranks" \
    "$exe" "$mode" >"$log" 2>&1 || status=$?
  exited=$(grep -c '^rank [0-9]*: exited' "$log" || true)
  if [ "$status" -ne 0 ] || [ "$exited" -ne "$ranks" ] ||
    grep -qiE 'warn|mpool|rcache|assert' "$log"; then
    cat "$log"
    echo "finalize-by-mpi ($mode, $ranks ranks): exit status $status," \
      "$exited of $ranks ranks exited, or the transport warned"
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
done
echo "finalize-by-mpi: $ranks ranks exited cleanly, with and without an" \
  "error, and with the progress thread"
