#!/usr/bin/env bash
# An emulated cluster on one machine: NODES network namespaces (sg2emu0, sg2emu1, ...) joined by veth
# pairs to one bridge, each node's link shaped by tc to RATE (a token bucket on the node's egress,
# so every node sends at most RATE: a full-duplex NIC of that speed), and COMMAND run once in every
# node at the same time, with
#   SG2_NODE_RANK (0 .. NODES-1), SG2_NNODES, SG2_MASTER_ADDR (node 0's address), SG2_NODE_ADDR,
#   GLOO_SOCKET_IFNAME=eth0 (the node's only interface besides lo)
# in its environment. Each node's output goes to LOG_DIR/node<i>.log (default: a temporary
# directory, printed); the exit code is non-zero when any node's is. Needs root and network
# namespaces. RATE is a tc rate (1gbit, 10gbit, 25gbit) or "none" (the bare veth).
# Latency is not emulated: this kernel has no netem queueing discipline (tc reports it unknown).
#   scripts/bench/netns_cluster.sh NODES RATE -- COMMAND [ARGS...]
#   scripts/bench/netns_cluster.sh 2 10gbit -- sh -c 'echo node $SG2_NODE_RANK of $SG2_NNODES'
set -euo pipefail
nodes=${1:?usage: netns_cluster.sh NODES RATE -- COMMAND...}
rate=${2:?usage: netns_cluster.sh NODES RATE -- COMMAND...}
shift 2
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "netns_cluster: no command" >&2; exit 2; }
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
bridge=sg2emubr
subnet=10.78.0

teardown() {
  for ((i = 0; i < nodes; i++)); do ip netns del "sg2emu$i" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
}
teardown  # leftovers of an interrupted run
trap teardown EXIT

# tbf's bucket: 10 ms of traffic at RATE (at least 64 KiB), so shaping costs no throughput.
burst_bytes() {
  local bits
  bits=$(echo "$1" | awk '{v = $1 + 0; u = tolower($1); sub(/^[0-9.]+/, "", u);
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : 1; printf "%.0f", v * m}')
  echo $((bits / 8 / 100 > 65536 ? bits / 8 / 100 : 65536))
}

ip link add "$bridge" type bridge
ip link set "$bridge" up
for ((i = 0; i < nodes; i++)); do
  ns="sg2emu$i"
  ip netns add "$ns"
  ip link add "sg2emuv$i" type veth peer name eth0 netns "$ns"
  ip link set "sg2emuv$i" master "$bridge" up
  ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  if [ "$rate" != none ]; then
    tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$(burst_bytes "$rate")" latency 200ms
  fi
done

pids=()
for ((i = 0; i < nodes; i++)); do
  ip netns exec "sg2emu$i" env SG2_NODE_RANK="$i" SG2_NNODES="$nodes" SG2_MASTER_ADDR="$subnet.1" \
      SG2_NODE_ADDR="$subnet.$((i + 1))" GLOO_SOCKET_IFNAME=eth0 "$@" > "$log_dir/node$i.log" 2>&1 &
  pids+=($!)
done
status=0
for ((i = 0; i < nodes; i++)); do
  wait "${pids[$i]}" || { status=$?; echo "netns_cluster: node $i exited $status (log: $log_dir/node$i.log)" >&2; }
done
echo "netns_cluster: $nodes nodes at $rate, logs in $log_dir"
exit "$status"
