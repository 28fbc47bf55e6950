#!/usr/bin/env bash
# The compute term of the scaling model: N independent single-process trainings of the same
# per-rank batch at the same time (local backend, no communication), so the machine's cores and
# memory are shared as in an N-rank run. Each writes its output to PREFIX-<i>.txt and its record to
# PREFIX-<i>.jsonl (--jsonl); prints the path of the slowest one's record (its step is the step an
# N-rank run would take without communication).
#   scripts/bench/compute_only.sh N PREFIX -- STYLEGAN2_BENCH [ARGS...]
set -euo pipefail
n=${1:?usage: compute_only.sh N PREFIX -- STYLEGAN2_BENCH [ARGS...]}
prefix=${2:?usage: compute_only.sh N PREFIX -- STYLEGAN2_BENCH [ARGS...]}
shift 2
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "compute_only: no command" >&2; exit 2; }
pids=() outputs=() records=()
for ((i = 0; i < n; i++)); do
  outputs+=("$prefix-$i.txt")
  records+=("$prefix-$i.jsonl")
  rm -f "${records[$i]}"
  "$@" --dist.backend local --jsonl "${records[$i]}" > "${outputs[$i]}" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "compute_only: ${outputs[$i]}: the bench failed" >&2; status=1; }
done
[ $status -eq 0 ] || exit 1
for record in "${records[@]}"; do
  printf '%s %s\n' "$("$(dirname "$0")/scaling_model" fields "$record" step_s)" "$record"
done | sort -g | tail -n 1 | cut -d' ' -f2
