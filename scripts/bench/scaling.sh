#!/usr/bin/env bash
# Strong and weak scaling of the real training step. For every world size N in RANKS:
#   strong: the global batch fixed at STRONG_BATCH, so each rank trains STRONG_BATCH / N images;
#   weak:   each rank's batch fixed at WEAK_BATCH, so the global batch is N x WEAK_BATCH;
# each measured twice with stylegan2_bench (CONFIG, one thread per rank):
#   distributed: mpirun -np N, the gradient allreduce in the step (MPI backend, overlap on);
#   compute:     N independent processes at once (scripts/bench/compute_only.sh: no
#                communication) on the same per-rank batch, so the cores are shared as in the
#                distributed run; the slowest process's step is the step without communication;
# then the comm bench at each N. Writes $OUT/scaling.tsv (one row per sweep and N), $OUT/scaling.png
# (s/kimg and efficiency against ranks, with the paper's points; scripts/bench/plot_scaling) and
# every run's output (.txt) and record (.jsonl, which the numbers come from), for
# `scripts/bench/scaling_model validate-scaling $OUT`.
#   scripts/bench/scaling.sh [BUILD_DIR]
#   RANKS="1 2 4" STRONG_BATCH=16 WEAK_BATCH=8 CONFIG=configs/bench-cpu-32.yaml OUT=/tmp/scaling scripts/bench/scaling.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
# Smallest first: the first row of each sweep is its efficiency baseline.
read -r -a ranks <<< "$(tr ' ' '\n' <<< "${RANKS:-1 2 4}" | sort -n | tr '\n' ' ')"
strong_batch=${STRONG_BATCH:-16}
weak_batch=${WEAK_BATCH:-8}
config=${CONFIG:-configs/bench-cpu-32.yaml}
out=${OUT:-$PWD/scaling}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
bench=("$build/bin/stylegan2_bench" --config "$config" --run.threads 1 --no-op-families --cycles "${CYCLES:-1}" --warmup 1 --repeats 2)
results="$out/scaling.tsv"
printf 'sweep\tranks\tglobal_batch\trank_batch\tstep_s\timg_per_s\ts_per_kimg\tefficiency\tcompute_step_s\tcompute_img_per_s\tallreduce_busy_s\tallreduce_exposed_s\tGmain_s\tGreg_s\tDmain_s\tDreg_s\n' > "$results"

# fields FILE NAME...: values of a stylegan2_bench --jsonl record, tab-separated (scaling_model's reader).
fields() { scripts/bench/scaling_model fields "$@"; }

measure() {  # measure SWEEP N GLOBAL_BATCH
  local sweep=$1 n=$2 global_batch=$3
  local rank_batch=$((global_batch / n)) name="$sweep-np$n"
  echo "== $sweep: $n ranks, global batch $global_batch ($rank_batch per rank)"
  rm -f "$out/$name.jsonl"
  mpirun --oversubscribe -np "$n" "${bench[@]}" --train.batch "$global_batch" --jsonl "$out/$name.jsonl" \
      > "$out/$name.txt" 2>&1 || { cat "$out/$name.txt" >&2; exit 1; }
  local compute
  compute=$(scripts/bench/compute_only.sh "$n" "$out/$name-compute" -- "${bench[@]}" --train.batch "$rank_batch")
  local step busy exposed compute_step phases
  IFS=$'\t' read -r step busy exposed < <(fields "$out/$name.jsonl" step_s allreduce_busy_s allreduce_exposed_s)
  IFS=$'\t' read -r compute_step phases < <(fields "$compute" step_s Gmain_s Greg_s Dmain_s Dreg_s)
  printf '%s\t%d\t%d\t%d\t%s\t%s\t%s\t-\t%s\t%s\t%s\t%s\t%s\n' "$sweep" "$n" "$global_batch" "$rank_batch" \
      "$step" "$(awk -v b="$global_batch" -v s="$step" 'BEGIN {printf "%.3f", b / s}')" \
      "$(awk -v b="$global_batch" -v s="$step" 'BEGIN {printf "%.2f", 1000 * s / b}')" \
      "$compute_step" "$(awk -v b="$global_batch" -v s="$compute_step" 'BEGIN {printf "%.3f", b / s}')" \
      "$busy" "$exposed" "$phases" >> "$results"
  tail -n 1 "$results"
}

for n in "${ranks[@]}"; do
  (( strong_batch % n == 0 )) || { echo "scaling: STRONG_BATCH $strong_batch is not divisible by $n ranks" >&2; exit 2; }
  measure strong "$n" "$strong_batch"
done
for n in "${ranks[@]}"; do measure weak "$n" $((weak_batch * n)); done

# The allreduce at each world size, for the model (scripts/bench/scaling_model validate-scaling).
for n in "${ranks[@]}"; do
  (( n > 1 )) || continue
  rm -f "$out/comm-np$n.jsonl"
  mpirun --oversubscribe -np "$n" "$build/bin/stylegan2_bench" comm --config "$config" --max-bytes 67108864 \
      --iters 5 --jsonl "$out/comm-np$n.jsonl" > "$out/comm-np$n.txt"
done

# Efficiency: img/s at N ranks over N times img/s at the sweep's smallest world size (per rank).
awk -F'\t' -v OFS='\t' 'NR == 1 {print; next}
  !($1 in base_rate) {base_rate[$1] = $6 / $2}
  {$8 = sprintf("%.3f", $6 / ($2 * base_rate[$1])); print}' "$results" > "$results.tmp"
mv "$results.tmp" "$results"
column -t -s $'\t' "$results"
scripts/bench/plot_scaling "$results" --out "$out/scaling.png"
echo "== $out/scaling.png"
