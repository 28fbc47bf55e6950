#!/usr/bin/env bash
# The allreduce and the training step over an emulated network: NODES nodes of one rank
# each (scripts/bench/netns_cluster.sh: network namespaces, veth, a bridge, tc bandwidth; or, for
# RATE@DELAY, link_emulator's links with that one-way latency too), Gloo over TCP through
# stylegan2_launch, at each RATE. For every rate: the comm bench (message sizes and the
# preset's gradient buckets) and the training bench with the allreduce overlapped with backward and
# after it; then the compute term of the model (scripts/bench/compute_only.sh: NODES processes with
# the per-rank batch at once, no communication). Writes $OUT/emulated_network.tsv (rate,
# measurement, value), every output and every record (RATE-comm.jsonl, RATE-step-OVERLAP.jsonl,
# compute-I.jsonl: the numbers come from these), for `scripts/bench/scaling_model validate-emulated
# $OUT`.
# BATCH (default 32) is the global batch; BENCH_ARGS are added to every training bench (e.g.
# "--dist.bucket_mb 4").
#   scripts/bench/emulated_network.sh [BUILD_DIR] [NODES] [RATE[@DELAY]...]    (default: build 2 none 25gbit 10gbit 1gbit)
#   scripts/bench/emulated_network.sh build 2 1gbit@100us 1gbit@1ms 200mbit@1ms
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
export LINK_EMULATOR=$bin/link_emulator
results="$out/emulated_network.tsv"
printf 'rate\tmeasurement\tvalue\n' > "$results"
export OMP_NUM_THREADS=1
batch=${BATCH:-32}
read -r -a user_args <<< "${BENCH_ARGS:-}"
bench_args=("${user_args[@]}" --run.threads 1 --no-op-families --cycles 1 --warmup 1 --repeats 2)

# Runs stylegan2_bench ARGS on every emulated node under stylegan2_launch (one rank per node);
# LINK is RATE or RATE@DELAY.
on_cluster() {  # on_cluster LINK NAME ARGS...
  local link=$1 name=$2 delay=()
  shift 2
  [[ $link == *@* ]] && delay=("${link#*@}")
  LOG_DIR="$out/$link-$name" scripts/bench/netns_cluster.sh "$nodes" "${link%@*}" "${delay[@]}" -- sh -c \
      'exec "$0" --nproc-per-node 1 --nnodes "$SG2_NNODES" --node-rank "$SG2_NODE_RANK" \
           --master-addr "$SG2_MASTER_ADDR" --master-port 29731 -- "$@"' \
      "$bin/stylegan2_launch" "$bin/stylegan2_bench" "$@" > /dev/null
  cat "$out/$link-$name/node0.log"
}

for rate in "${rates[@]}"; do
  echo "== $nodes nodes at $rate"
  comm_record="$out/$rate-comm.jsonl"
  rm -f "$comm_record"
  on_cluster "$rate" comm comm --config "$config" "${user_args[@]}" --run.threads 1 --max-bytes 67108864 --iters 5 \
      --jsonl "$comm_record" > /dev/null
  printf "bytes\ttime_us\tbusbw_GBps\n" >&2
  while IFS=$'\t' read -r bytes time_us busbw; do
    printf '%s\t%s\t%s\n' "$bytes" "$time_us" "$busbw" >&2
    printf '%s\tallreduce_us_%s\t%s\n%s\tbusbw_GBps_%s\t%s\n' "$rate" "$bytes" "$time_us" "$rate" "$bytes" "$busbw"
  done < <(scripts/bench/scaling_model comm-rows "$comm_record") >> "$results"
  for overlap in true false; do
    step_record="$out/$rate-step-$overlap.jsonl"
    rm -f "$step_record"
    on_cluster "$rate" "step-overlap-$overlap" --config "$config" "${bench_args[@]}" --train.batch "$batch" \
        --dist.overlap "$overlap" --jsonl "$step_record" > "$out/$rate-step-$overlap.txt"
    IFS=$'\t' read -r img_per_s busy exposed < <(scripts/bench/scaling_model fields "$step_record" img_per_s \
        allreduce_busy_s allreduce_exposed_s)
    echo "overlap $overlap: $img_per_s img/s, allreduce per step busy $busy s, exposed $exposed s"
    printf '%s\t%s_overlap_%s\t%s\n' "$rate" step_img_per_s "$overlap" "$img_per_s" "$rate" allreduce_busy_s "$overlap" \
        "$busy" "$rate" allreduce_exposed_s "$overlap" "$exposed" >> "$results"
  done
done
echo "== compute only: $nodes processes of $((batch / nodes)) images, no communication"
scripts/bench/compute_only.sh "$nodes" "$out/compute" -- "$bin/stylegan2_bench" --config "$config" \
    "${bench_args[@]}" --train.batch $((batch / nodes))
echo "== $results"
cat "$results"
