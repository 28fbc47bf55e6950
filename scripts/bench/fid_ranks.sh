#!/usr/bin/env bash
# Times a metric of one snapshot with 1 process x N threads and with N MPI ranks x 1 thread (N = the
# machine's cores), each twice: with a cold real-statistics cache (real features + fakes) and a warm
# one (fakes only). Prints the metric value of every run (they must agree) and the times.
#   scripts/bench/fid_ranks.sh SNAPSHOT DETECTOR [METRIC (fid10k_full)] [RANKS (nproc)]
set -euo pipefail
snapshot=$1 detector=$2 metric=${3:-fid10k_full} ranks=${4:-$(nproc)}
bin=${BIN:-build/bin}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT

run() {  # run PROCESSES THREADS LABEL
  local start end out
  start=$(date +%s.%N)
  mpirun --oversubscribe --bind-to none -np "$1" "$bin/stylegan2_metrics" --network "$snapshot" \
    --detector "$detector" --metrics "$metric" --metric.cache_dir "$cache/$1" --run.threads "$2" --no-log \
    > "$cache/out" 2> "$cache/err" || { cat "$cache/err" >&2; echo "fid_ranks: $3 failed" >&2; exit 1; }
  end=$(date +%s.%N)
  out=$(grep '^{' "$cache/out") || { cat "$cache/out" "$cache/err" >&2; echo "fid_ranks: $3 printed no result" >&2; exit 1; }
  printf "%-28s %8.1f s   %s\n" "$3" "$(awk -v a="$end" -v b="$start" 'BEGIN { print a - b }')" "$out"
}

echo "# $metric of $snapshot, detector $detector, $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p'))"
for state in cold warm; do
  run 1 "$ranks" "1 process x $ranks threads, $state"
  run "$ranks" 1 "$ranks ranks x 1 thread, $state"
done
