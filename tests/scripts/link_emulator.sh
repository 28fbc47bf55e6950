#!/usr/bin/env bash
# The emulated network with a latency (tools/link_emulator through scripts/bench/netns_cluster.sh),
# measured over the kernel's TCP stack by tests/scripts/link_probe.py: round trips take twice the
# one-way delay, a bulk transfer runs at about the rate, every byte passes through the emulator, and
# a bad delay stops the cluster naming it. Skips (77) without network namespaces or /dev/net/tun.
#   tests/scripts/link_emulator.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! ip netns add sg2probe 2> "$work/netns.log"; then
  echo "SKIP: cannot create network namespaces here ($(cat "$work/netns.log"))"; exit 77
fi
ip netns del sg2probe
[ -c /dev/net/tun ] || { echo "SKIP: no /dev/net/tun"; exit 77; }
export LINK_EMULATOR=$bin/link_emulator
cluster=$src/scripts/bench/netns_cluster.sh
probe=$src/tests/scripts/link_probe.py

# value NAME FILE: the number after NAME in the probe's output.
value() { awk -v name="$1" '$1 == name { print $2 }' "$2"; }
# within VALUE LOW HIGH WHAT: fails unless LOW <= VALUE <= HIGH.
within() {
  awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v + 0 >= lo && v + 0 <= hi) }' ||
    { echo "FAIL: $4 is '$1', expected between $2 and $3"; exit 1; }
  echo "ok: $4 = $1 (expected $2 .. $3)"
}

# 100 Mbit/s and 5 ms each way; 8 MiB in bulk (its first round trips are TCP's slow start).
LOG_DIR="$work/shaped" "$cluster" 2 100mbit 5ms -- python3 "$probe" 8388608 40
cat "$work/shaped/node1.log" "$work/shaped/link_emulator.log"
within "$(value round_trip_ms "$work/shaped/node1.log")" 10.0 15.0 "round trip at 5 ms each way (ms)"
within "$(value megabits_per_s "$work/shaped/node1.log")" 60 100.5 "bulk rate at 100mbit (Mbit/s)"
sent=$(sed -n 's/.*node 1 (sg2emu1) sent [0-9]* packets, \([0-9]*\) bytes.*/\1/p' "$work/shaped/link_emulator.log")
within "$sent" 8388608 20000000 "bytes node 1 sent through the emulator"

# Unshaped, 1 ms each way.
LOG_DIR="$work/delay-only" "$cluster" 2 none 1ms -- python3 "$probe" 1048576 40
within "$(value round_trip_ms "$work/delay-only/node1.log")" 2.0 6.0 "round trip at 1 ms each way, unshaped (ms)"

# A delay the emulator cannot read: the cluster stops before any node runs, naming it.
if LOG_DIR="$work/bad" "$cluster" 2 1gbit 5parsecs -- true 2> "$work/bad.err"; then
  echo "FAIL: a delay of '5parsecs' was accepted"; exit 1
fi
grep -q "'5parsecs' is not a duration" "$work/bad.err" || { echo "FAIL: no clear error:"; cat "$work/bad.err"; exit 1; }
echo "ok: $(grep -o "'5parsecs' is not a duration[^)]*)" "$work/bad.err")"
