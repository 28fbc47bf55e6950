#!/usr/bin/env bash
# The GPU compute term of the scaling model: config-f at 256x256 (synthetic data, the reference's
# mixed precision: num_fp16_res 4, conv_clamp 256) on one GPU at per-GPU batches 4, 8, 16 and 32,
# then the gradient bucket layout. Writes $OUT/compute-b<B>.txt and .jsonl (the output and the
# record) and $OUT/layout-config-f-256.txt and .jsonl, and the build's output and every run's
# errors to $OUT/gpu_compute_term.log;
# a run that fails or passes SG2_RUN_LIMIT_S (default 150 s) is named there and the others still run,
# all within SG2_BENCH_BUDGET_S (default 560 s, inside a device call's 600); for
#   scripts/bench/scaling_model predict-gpu $OUT/layout-config-f-256.jsonl --measured $OUT --measured-fabric H100
#   OUT=$OUT scripts/bench/gpu_compute_term.sh [BUILD_DIR]     (the GPU kit's build: build-gpu)
#   DEVICE=cpu OUT=/tmp/x scripts/bench/gpu_compute_term.sh build   (the script's own dry run: tiny networks)
#   SG2_BENCH_EXTRA="--run.cuda_graphs true" OUT=$OUT scripts/bench/gpu_compute_term.sh   (more flags for
#     every run: with CUDA graphs, the fixed cost a step left once the host no longer issues each op)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/run_budget.sh
build=${1:-${GPU_BUILD_DIR:-build-gpu}}
out=${OUT:-$PWD/gpu-compute-term}
device=${DEVICE:-cuda}
mkdir -p "$out"
log="$out/gpu_compute_term.log"
: > "$log"
run_clock_start gpu_compute_term "$log" "${SG2_BENCH_BUDGET_S:-560}" "${SG2_RUN_LIMIT_S:-150}"
if [ "$device" = cuda ]; then  # on a fresh machine as well: the kit's binaries, or a build
  source scripts/gpu/kit_steps.sh
  ensure_build "$build" > "$log" 2>&1 || { echo "gpu_compute_term: no build in $build (see $log)" >&2; exit 1; }
fi
config=(--config configs/config-f.yaml --data synthetic --data.resolution 256 --data.channels 3
        --run.device "$device" "${config_f_precision[@]}")
label="config-f 256"
read -ra extra <<< "${SG2_BENCH_EXTRA:-}"
if [ "$device" = cpu ]; then  # a dry run of the script: tiny float32 networks (float16 crawls on a CPU)
  config=(--config configs/config-f.yaml --data synthetic --data.resolution 16 --data.channels 3 --run.device cpu
          --G.channel_base 256 --D.channel_base 256 --G.z_dim 32 --G.w_dim 32 --run.threads 2)
  label="config-f 16 (tiny, dry run)"
fi
config+=("${extra[@]}")
[ ${#extra[@]} -eq 0 ] || label="$label, ${extra[*]}"
for batch in ${BATCHES:-4 8 16 32}; do
  echo "== $label, batch $batch"
  rm -f "$out/compute-b$batch.jsonl"
  budgeted_run "$out/compute-b$batch.txt" "$build/bin/stylegan2_bench" "${config[@]}" --train.batch "$batch" \
      --no-op-families --cycles 1 --jsonl "$out/compute-b$batch.jsonl"
  [ -s "$out/compute-b$batch.jsonl" ] &&
    echo "step_s img_per_s: $(scripts/bench/scaling_model fields "$out/compute-b$batch.jsonl" step_s img_per_s)"
done
rm -f "$out/layout-config-f-256.jsonl"
budgeted_run "$out/layout-config-f-256.txt" "$build/bin/stylegan2_bench" comm "${config[@]}" --max-bytes 1048576 \
    --iters 2 --jsonl "$out/layout-config-f-256.jsonl"
echo "== $out"
[ "$run_failures" -eq 0 ] || { echo "gpu_compute_term: $run_failures run(s) failed (see $log)" >&2; exit 1; }
