#!/usr/bin/env bash
# bench/cluster/runtime_vs_mpi.sh - GradComm's dense, ScaleCom and gossip
# against raw MPI_Allreduce / MPI_Sendrecv in the same run
# (gradcomm-runtime-vs-mpi), on shared memory and, as root, on the emulated
# cluster (bench/cluster/netns.sh, RATE links), where the counters' bytes
# are printed beside the interface's. Deletes what it made on exit. A
# benchmark, never a test (docs/performance.md, "Runtime against raw MPI").
#
#   bench/cluster/runtime_vs_mpi.sh [build-dir] [ranks, default "2 4"]
#       environment: SIZES (default 65536,1000000,25000000; 100000000 for
#       the largest model), REPS (default 5), RATE (default 1gbit),
#       CLUSTER (default 1; 0: shared memory only), SMALL (the many-small-
#       tensors case, TENSORSxCOUNT, default 100x10000)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${1:-build}")
ranks=${2:-"2 4"}
sizes=${SIZES:-65536,1000000,25000000}
reps=${REPS:-5}
rate=${RATE:-1gbit}
cluster=${CLUSTER:-1}
small=${SMALL:-100x10000}
bench=$build/bench/calibrate/gradcomm-runtime-vs-mpi
ninja -C "$build" gradcomm-runtime-vs-mpi >/dev/null
echo "machine: $(nproc) cores; $(lscpu | grep -E '^(L2|L3) cache' | tr -s ' ' | paste -sd ';')"
for n in $ranks; do
  # A rank per core when there are enough cores: unbound ranks migrate, and
  # the figures with them.
  bind=()
  ((n <= $(nproc))) && bind=(-bind-to core)
  echo "== $n ranks, shared memory ${bind[*]}"
  timeout 1800 /usr/bin/mpiexec.mpich "${bind[@]}" -n "$n" "$bench" "$sizes" "$reps" "$small"
done
[ "$cluster" = 1 ] || exit 0
trap 'bash bench/cluster/netns.sh down' EXIT
for n in $ranks; do
  echo "== $n ranks, emulated cluster, $rate links"
  bash bench/cluster/netns.sh up "$n" "$rate"
  DONE_PATTERN='^done' timeout 3600 bash bench/cluster/netns.sh run "$n" \
    env GRADCOMM_BENCH_IFACE=eth0 "$bench" "$sizes" "$reps" "$small"
done
