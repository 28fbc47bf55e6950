#!/usr/bin/env bash
# The compute term of the scaling model (issue 15): N independent single-process trainings of the
# same per-rank batch at the same time (local backend, no communication), so the machine's cores
# and memory are shared as in an N-rank run. Each writes PREFIX-<i>.txt; prints the path of the
# slowest one (its step is the step an N-rank run would take without communication).
#   scripts/bench/compute_only.sh N PREFIX -- STYLEGAN2_BENCH [ARGS...]
set -euo pipefail
n=${1:?usage: compute_only.sh N PREFIX -- STYLEGAN2_BENCH [ARGS...]}
prefix=${2:?usage: compute_only.sh N PREFIX -- STYLEGAN2_BENCH [ARGS...]}
shift 2
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "compute_only: no command" >&2; exit 2; }
pids=() outputs=()
for ((i = 0; i < n; i++)); do
  outputs+=("$prefix-$i.txt")
  "$@" --dist.backend local > "${outputs[$i]}" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "compute_only: ${outputs[$i]}: the bench failed" >&2; status=1; }
done
[ $status -eq 0 ] || exit 1
awk '$1 == "step" {print $2, FILENAME}' "${outputs[@]}" | sort -g | tail -n 1 | cut -d' ' -f2
