#!/usr/bin/env bash
# FinalizeByMpiTest.cpp on <ranks> ranks, with and without a rank's error:
# every rank exits 0 and says so, and MPI's transport prints no warning
# (UCX's "not returned to mpool" and rcache assertions are what open
# windows at MPI_Finalize cause).
# Usage: finalize-by-mpi.sh <mpiexec> <ranks> <test executable>
set -euo pipefail
mpiexec=$1 ranks=$2 exe=$3
# With the asynchronous ops' progress thread, which the runtime's
# MPI_Finalize stops before MPI finalizes (docs/runtime.md, "The finalize
# contract").
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
