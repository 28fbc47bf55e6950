#!/usr/bin/env bash
# An emulated cluster on one machine: NODES network namespaces (sg2emu0, sg2emu1, ...), each with one
# link (eth0) at RATE, and COMMAND run once in every node at the same time, with
#   SG2_NODE_RANK (0 .. NODES-1), SG2_NNODES, SG2_MASTER_ADDR (node 0's address), SG2_NODE_ADDR,
#   GLOO_SOCKET_IFNAME=eth0 (the node's only interface besides lo)
# in its environment. Without DELAY the nodes are joined by veth pairs to one bridge and each node's
# egress is shaped by tc (a token bucket: every node sends at most RATE, a full-duplex NIC of that
# speed). With DELAY (a one-way latency: 100us, 0.5ms, 1ms; this kernel has no tc netem) the links
# are TUN devices served by link_emulator (tools/link_emulator: the same egress RATE, then DELAY per
# packet, in both directions, so a round trip takes 2 x DELAY), MTU 9000 (jumbo frames; MTU=...
# changes it), the program found at $LINK_EMULATOR (default build/bin/link_emulator).
# Two levels (with DELAY): HOSTS_PER_NODE=P groups the namespaces P at a time into nodes, linked
# inside at RATE and DELAY; between nodes through one NIC a node at NODE_RATE, NODE_DELAY apart
# (link_emulator --hosts-per-node). QUEUE_LIMIT (default 200ms) is the longest a packet waits before a
# queue drops it. Every namespace has TCP's slow start after idle off (an InfiniBand or RoCE fabric
# has none), so that a connection idle between phases sends at once at its window.
# Each node's output goes to LOG_DIR/node<i>.log (default: a temporary directory, printed), the
# emulator's to LOG_DIR/link_emulator.log; the exit code is non-zero when any node's is. Needs root
# and network namespaces. RATE is a tc rate (1gbit, 10gbit, 25gbit) or "none" (unshaped).
#   scripts/bench/netns_cluster.sh NODES RATE [DELAY] -- COMMAND [ARGS...]
#   scripts/bench/netns_cluster.sh 2 10gbit -- sh -c 'echo node $SG2_NODE_RANK of $SG2_NNODES'
#   scripts/bench/netns_cluster.sh 2 1gbit 500us -- sh -c 'echo node $SG2_NODE_RANK of $SG2_NNODES'
set -euo pipefail
usage="usage: netns_cluster.sh NODES RATE [DELAY] -- COMMAND..."
nodes=${1:?$usage}
rate=${2:?$usage}
shift 2
delay=
if [ $# -gt 0 ] && [ "$1" != -- ]; then delay=$1; shift; fi
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "netns_cluster: no command" >&2; exit 2; }
log_dir=${LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir"
bridge=sg2emubr
subnet=10.78.0
emulator=${LINK_EMULATOR:-$(dirname "$0")/../../build/bin/link_emulator}
emulator_pid=

teardown() {
  if [ -n "$emulator_pid" ]; then
    kill -TERM "$emulator_pid" 2>/dev/null || true
    wait "$emulator_pid" 2>/dev/null || true  # it prints what each node sent on the way out
  fi
  for ((i = 0; i < nodes; i++)); do ip netns del "sg2emu$i" 2>/dev/null || true; done
  ip link del "$bridge" 2>/dev/null || true
}
teardown  # leftovers of an interrupted run
pkill -TERM -f "link_emulator .*sg2emu0=" 2>/dev/null || true
trap teardown EXIT

# tbf's bucket: 10 ms of traffic at RATE (at least 64 KiB), so shaping costs no throughput.
burst_bytes() {
  local bits
  bits=$(echo "$1" | awk '{v = $1 + 0; u = tolower($1); sub(/^[0-9.]+/, "", u);
    m = (u == "kbit") ? 1e3 : (u == "mbit") ? 1e6 : (u == "gbit") ? 1e9 : 1; printf "%.0f", v * m}')
  echo $((bits / 8 / 100 > 65536 ? bits / 8 / 100 : 65536))
}

# veth pairs to a bridge, each node's egress shaped by tc.
bridged_links() {
  ip link add "$bridge" type bridge
  ip link set "$bridge" up
  for ((i = 0; i < nodes; i++)); do
    ns="sg2emu$i"
    ip link add "sg2emuv$i" type veth peer name eth0 netns "$ns"
    ip link set "sg2emuv$i" master "$bridge" up
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ "$rate" != none ]; then
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$(burst_bytes "$rate")" latency 200ms
    fi
  done
}

# TUN devices served by link_emulator: RATE, then DELAY.
emulated_links() {
  [ -x "$emulator" ] || { echo "netns_cluster: no link_emulator at '$emulator' (build it, or set LINK_EMULATOR)" >&2; exit 2; }
  local addresses=()
  for ((i = 0; i < nodes; i++)); do addresses+=("sg2emu$i=$subnet.$((i + 1))"); done
  local levels=()
  if [ "${HOSTS_PER_NODE:-0}" != 0 ]; then
    levels=(--hosts-per-node "$HOSTS_PER_NODE" --node-rate "${NODE_RATE:?HOSTS_PER_NODE needs NODE_RATE}"
      --node-delay "${NODE_DELAY:-0}")
  fi
  "$emulator" --rate "$rate" --delay "$delay" --queue-limit "${QUEUE_LIMIT:-200ms}" "${levels[@]}" "${addresses[@]}" \
    > "$log_dir/link_emulator.log" 2>&1 &
  emulator_pid=$!
  for ((tries = 0; tries < 100; tries++)); do
    grep -q "link_emulator: ready" "$log_dir/link_emulator.log" && break
    kill -0 "$emulator_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! grep -q "link_emulator: ready" "$log_dir/link_emulator.log"; then
    echo "netns_cluster: link_emulator did not start:" >&2
    cat "$log_dir/link_emulator.log" >&2
    exit 2
  fi
  for ((i = 0; i < nodes; i++)); do
    ip -n "sg2emu$i" addr add "$subnet.$((i + 1))/24" dev eth0
    ip -n "sg2emu$i" link set eth0 mtu "${MTU:-9000}" up
    ip -n "sg2emu$i" link set lo up
  done
}

for ((i = 0; i < nodes; i++)); do
  ip netns add "sg2emu$i"
  ip -n "sg2emu$i" link set lo up
  ip netns exec "sg2emu$i" sysctl -qw net.ipv4.tcp_slow_start_after_idle=0 2>/dev/null || true
done
if [ -n "$delay" ]; then emulated_links; else bridged_links; fi

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
echo "netns_cluster: $nodes nodes at $rate${delay:+, one-way delay $delay}, logs in $log_dir"
exit "$status"
