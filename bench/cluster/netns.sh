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

run() {
  local n=$1 i
  shift
  local args=(-genv UCX_TLS tcp,self -genv UCX_NET_DEVICES eth0
    -genv MPIR_CVAR_CH4_NETMOD ucx)
  for ((i = 0; i < n; i++)); do
    [ "$i" -gt 0 ] && args+=(:)
    args+=(-n 1 ip netns exec "$prefix$i" "$@")
  done
  /usr/bin/mpiexec.mpich "${args[@]}"
}

case "${1:-}" in
up) up "$2" "${3:-1gbit}" ;;
run) shift; run "$@" ;;
down) down ;;
*) sed -n '2,16p' "$0"; exit 2 ;;
esac
