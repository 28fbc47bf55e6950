#!/usr/bin/env bash
# The allreduce and the training step over an emulated network (issue 15): NODES nodes of one rank
# each (scripts/bench/netns_cluster.sh: network namespaces, veth, a bridge, tc bandwidth), Gloo over
# TCP through stylegan2_launch, at each RATE. For every rate: the comm bench (message sizes and the
# preset's gradient buckets) and the training bench with the allreduce overlapped with backward and
# after it. Writes $OUT/emulated_network.tsv (rate, measurement, value) and every node's log.
#   scripts/bench/emulated_network.sh [BUILD_DIR] [NODES] [RATE...]    (default: build 2 none 25gbit 10gbit 1gbit)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
nodes=${2:-2}
shift $(($# >= 2 ? 2 : $#))
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(none 25gbit 10gbit 1gbit)
config=${CONFIG:-configs/bench-cpu-32.yaml}
out=${OUT:-$PWD/emulated-network}
mkdir -p "$out"
bin=$(cd "$build/bin" && pwd)
results="$out/emulated_network.tsv"
printf 'rate\tmeasurement\tvalue\n' > "$results"
export OMP_NUM_THREADS=1

# Runs stylegan2_bench ARGS on every emulated node under stylegan2_launch (one rank per node).
on_cluster() {  # on_cluster RATE NAME ARGS...
  local rate=$1 name=$2
  shift 2
  LOG_DIR="$out/$rate-$name" scripts/bench/netns_cluster.sh "$nodes" "$rate" -- sh -c \
      'exec "$0" --nproc-per-node 1 --nnodes "$SG2_NNODES" --node-rank "$SG2_NODE_RANK" \
           --master-addr "$SG2_MASTER_ADDR" --master-port 29731 -- "$@"' \
      "$bin/stylegan2_launch" "$bin/stylegan2_bench" "$@" > /dev/null
  cat "$out/$rate-$name/node0.log"
}

for rate in "${rates[@]}"; do
  echo "== $nodes nodes at $rate"
  on_cluster "$rate" comm comm --config "$config" --run.threads 1 --max-bytes 67108864 --iters 5 |
      awk -v rate="$rate" '$1 ~ /^[0-9]+$|^G$|^D$/ && NF >= 6 {print} $1 ~ /^[0-9]+$/ && NF == 6 {
        printf "%s\tallreduce_us_%s\t%s\n%s\tbusbw_GBps_%s\t%s\n", rate, $2, $3, rate, $2, $5 >> "'"$results"'"}'
  for overlap in true false; do
    on_cluster "$rate" "step-overlap-$overlap" --config "$config" --run.threads 1 --no-op-families --cycles 1 \
        --dist.overlap "$overlap" > "$out/$rate-step-$overlap.txt"
    grep -E "^throughput|allreduce busy" "$out/$rate-step-$overlap.txt"
    awk -v rate="$rate" -v overlap="$overlap" '
      /^throughput/ {gsub(/[,;]/, ""); printf "%s\tstep_img_per_s_overlap_%s\t%s\n", rate, overlap, $2}
      /allreduce busy/ {for (i = 1; i <= NF; ++i) {
        if ($i == "busy") printf "%s\tallreduce_busy_s_overlap_%s\t%s\n", rate, overlap, $(i + 1)
        if ($i == "exposed") printf "%s\tallreduce_exposed_s_overlap_%s\t%s\n", rate, overlap, $(i + 3)}}' \
        "$out/$rate-step-$overlap.txt" >> "$results"
  done
done
echo "== $results"
cat "$results"
