#!/usr/bin/env bash
# FinalizeByMpiTest.cpp on <ranks> ranks, with and without a rank's error:
# every rank exits 0 and says so, and MPI's transport prints no warning
# (UCX's "not returned to mpool" and rcache assertions are what open
# windows at MPI_Finalize cause).
# Usage: finalize-by-mpi.sh <mpiexec> <ranks> <test executable>
set -euo pipefail
mpiexec=$1 ranks=$2 exe=$3
# Without the asynchronous ops' progress thread: MPI forbids other threads
# in MPI while MPI_Finalize runs, and that thread is stopped only by the
# callback inside it, so with it this exit races (docs/runtime.md, "The
# finalize contract"; seen under ASan at 4 ranks).
export GRADCOMM_ASYNC_PROGRESS=0
for mode in clean error; do
  log=$(mktemp)
  status=0
  timeout 60 "$mpiexec" -n "$ranks" "$exe" "$mode" >"$log" 2>&1 || status=$?
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
echo "finalize-by-mpi: $ranks ranks exited cleanly, with and without an error"
