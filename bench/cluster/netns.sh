#!/usr/bin/env bash
# bench/cluster/netns.sh - an emulated cluster on one machine (root): one
# network namespace per rank (gcr0, gcr1, ...), each with a veth `eth0`
# into a bridge in its own namespace (gcsw), shaped with `tc tbf` to RATE on
# both ends; MPICH over UCX tcp on those links only, so shared memory cannot
# bypass the shaping (docs/design/benchmarks.md, emulated cluster).
# Addresses are private to the namespaces made here (10.77.0.0/24); nothing
# is added to the root namespace.
#
#   netns.sh up N [RATE]      create N ranks' namespaces (RATE default 1gbit)
#   netns.sh run N CMD...     mpiexec.mpich CMD on N ranks, one per namespace
#                             (DONE_PATTERN: see run below)
#   netns.sh torchrun N ARGS...  torchrun ARGS (a script and its options) on
#                             N "nodes", one namespace and one rank each,
#                             no mpiexec: the runtime's MPI starts through
#                             torchrun's store (TORCHRUN: default
#                             .venv/bin/torchrun)
#   netns.sh down             delete everything this script made
set -euo pipefail

prefix=gcr
switch=gcsw

down() {
  local ns
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^($prefix[0-9]+|$switch)$" || true); do
    ip netns delete "$ns" 2>/dev/null || true
  done
}

up() {
  local n=$1 rate=${2:-1gbit} i
  down
  ip netns add "$switch"
  ip -n "$switch" link add br0 type bridge
  ip -n "$switch" link set br0 up
  for ((i = 0; i < n; i++)); do
    local ns=$prefix$i
    ip netns add "$ns"
    ip link add "v$ns" type veth peer name eth0 netns "$ns"
    ip link set "v$ns" netns "$switch"
    ip -n "$switch" link set "v$ns" master br0 up
    ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    # GSO super-packets larger than the bucket collapse a tbf's rate.
    ip netns exec "$ns" ip link set eth0 gso_max_size 16384 2>/dev/null || true
    ip -n "$switch" link set "v$ns" gso_max_size 16384 2>/dev/null || true
    tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst 512kb latency 50ms
    tc -n "$switch" qdisc add dev "v$ns" root tbf rate "$rate" burst 512kb latency 50ms
  done
}

# Kills `$1` and all its descendants (mpiexec, its proxy, the ranks).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    kill_tree "$child"
  done
  kill -KILL "$1" 2>/dev/null || true
}

# Runs CMD on N ranks and prints its output when it ends. UCX 1.13 can hang
# in MPI_Finalize over tcp (openucx/ucx#8738): when DONE_PATTERN (a grep
# pattern, e.g. '^summary') has appeared in the output and the job has not
# exited 10 s later, the job is ended and the run counts as finished.
run() {
  local n=$1 i
  shift
  # One "host" per rank (launched here, -launcher fork): MPI then maps
  # each rank to a node of its own, as on a cluster, instead of all of them
  # to this machine (MPI_COMM_TYPE_SHARED, node-aware algorithms, and the
  # runtime's same-node gossip pipeline follow that map).
  local hosts
  hosts=$(seq -s, -f "${prefix}host%g" 0 $((n - 1)))
  local args=(-launcher fork -hosts "$hosts"
    -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0
    -genv MPIR_CVAR_CH4_NETMOD ucx)
  for ((i = 0; i < n; i++)); do
    [ "$i" -gt 0 ] && args+=(:)
    args+=(-n 1 ip netns exec "$prefix$i" "$@")
  done
  local output rc=0 after=0
  output=$(mktemp)
  /usr/bin/mpiexec.mpich "${args[@]}" >"$output" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if [ -n "${DONE_PATTERN:-}" ] && grep -q -- "$DONE_PATTERN" "$output"; then
      after=$((after + 1))
      if [ "$after" -ge 20 ]; then
        echo "netns.sh: the job finished but did not exit (UCX MPI_Finalize" \
          "over tcp, openucx/ucx#8738); ended it" >>"$output"
        kill_tree "$pid"
        break
      fi
    fi
    sleep 0.5
  done
  wait "$pid" 2>/dev/null || rc=$?
  cat "$output"
  rm -f "$output"
  [ "$after" -ge 20 ] && rc=0
  return "$rc"
}

# torchrun on N namespaces as N nodes of one rank each, as a multi-node
# torchrun job runs: static rendezvous on node 0's address, gloo and UCX
# over eth0 only. Each rank names its node (GRADCOMM_NODE_NAME), since the
# namespaces share this machine's host name. Prints every node's output.
torchrun_nodes() {
  local n=$1 i rc=0
  shift
  local torchrun=${TORCHRUN:-.venv/bin/torchrun} dir
  dir=$(mktemp -d)
  local pids=()
  for ((i = 0; i < n; i++)); do
    ip netns exec "$prefix$i" env GRADCOMM_NODE_NAME="${prefix}host$i" \
      GLOO_SOCKET_IFNAME=eth0 UCX_TLS=tcp,self UCX_NET_DEVICES=eth0 \
      MPIR_CVAR_CH4_NETMOD=ucx \
      timeout "${NETNS_TIMEOUT:-900}" "$torchrun" --nnodes="$n" \
      --nproc-per-node=1 --node-rank="$i" --master-addr=10.77.0.1 \
      --master-port=29500 "$@" >"$dir/node$i.out" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    wait "${pids[$i]}" || rc=$?
    grep -v '^W[0-9]\{4\} \|\*\*\*\*\|OMP_NUM_THREADS' "$dir/node$i.out" || true
  done
  rm -rf "$dir"
  return "$rc"
}

case "${1:-}" in
up) up "$2" "${3:-1gbit}" ;;
run) shift; run "$@" ;;
torchrun) shift; torchrun_nodes "$@" ;;
down) down ;;
*) sed -n '2,21p' "$0"; exit 2 ;;
esac
