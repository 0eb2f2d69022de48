#!/usr/bin/env bash
# runtime.transport-double.nN: every op over the transport double (forked
# ranks, no MPI), then, at 2 ranks, the same calls over MPI under mpiexec:
# the results must be the same bytes (TransportTest.cpp).
# Usage: transport-double.sh MPIEXEC TEST_BINARY WORK_DIR RANKS
set -euo pipefail
mpiexec=$1 binary=$2 work=$3 ranks=$4
rm -rf "$work" && mkdir -p "$work"
"$binary" double "$ranks" "$work"
"$binary" double-without-windows "$ranks" "$work"
[ "$ranks" -eq 2 ] || exit 0
"$mpiexec" -n 2 "$binary" mpi "$work"
for rank in 0 1; do
  if ! cmp "$work/double.rank$rank" "$work/mpi.rank$rank"; then
    echo "rank $rank: the double and MPI gave different results" >&2
    exit 1
  fi
done
echo "the double and MPI gave the same $(stat -c %s "$work/mpi.rank0") bytes per rank"
