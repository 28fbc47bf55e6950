# scripts/gpu/session.sh's third call (sourced by it: dry_run, OUT, seconds_left, run_kit and
# run_comparison come from there). In the order of what it must learn first:
#   1. quality at speed (scripts/bench/gpu_quality.sh), with the GPU's own tests and the CUDA kernels
#      under compute-sanitizer's memcheck beside it (correctness, not timings, share the GPU there)
#      and the real datasets of 3. made on the CPU meanwhile;
#   2. the loader's img/s a worker thread on a 256x256 ZIP, then config-f's step on real data
#      (the ZIP, TFRecords) against synthetic, with the time a step waits for its batch;
#   3. config-f and paper256 (SG2_THIRD_PRESETS) at equal settings: both sides at 32 images a round,
#      NCHW and with the float16 blocks channels_last, ours also with CUDA graphs (gpu_vs_reference.sh);
#   4. the scaling model's compute term (gpu_compute_term.sh; SG2_BENCH_EXTRA="--run.cuda_graphs true"
#      with graphs) and its predictions.
# The quality trainings get gpu_quality.sh's SG2_QUALITY_TRAIN_S (210 s), the comparison what is left less 70 s.
# Writes $OUT/session.md (2. and 4.) besides the files of the scripts it runs.

source scripts/bench/run_budget.sh  # config_f_precision, tiny_bench; the runs' clock
real_resolution=256 real_images=6000 real_bench=(--config configs/config-f.yaml "${config_f_precision[@]}"
  --run.device cuda --train.batch_gpu 32 --run.channels_last reduced --no-op-families)
if [ ${#dry_run[@]} -gt 0 ]; then  # tiny float32 networks at 32x32 on the CPU
  real_resolution=32 real_images=512
  real_bench=(--config configs/config-f.yaml --run.device cpu "${tiny_bench[@]}" --no-op-families)
fi

# Fashion-MNIST rendered at real_resolution, RGB: a stylegan2-ada ZIP of PNGs and TFRecords.
make_real_datasets() {  # make_real_datasets DIR
  local source=${SG2_FASHION_MNIST:-/usr/share/datasets/fashion-mnist} dest
  for dest in "$1/real.zip" "$1/real-tfrecords"; do
    "$build/bin/stylegan2_dataset" create --source "$source" --dest "$dest" --resolution "$real_resolution" \
        --channels 3 --max-images "$real_images" --workers 4 || return 1
  done
}

# The loader alone (read, decode, batch, mirror) on the ZIP: img/s for 1, 2, 4 and 8 worker threads.
loader_throughput() {  # loader_throughput DIR
  local workers rate
  echo "| loader threads | img/s ($real_resolution x $real_resolution PNG ZIP) |"
  echo "|---|---|"
  for workers in 1 2 4 8; do
    rate=$("$build/bin/stylegan2_dataset" bench "$1/real.zip" --workers "$workers" --batches 100 \
             2>> "$OUT/session.log" | tee -a "$OUT/session.log" | grep -o '[0-9.,]* img/s' | head -n 1 | cut -d' ' -f1)
    echo "| $workers | ${rate:--} |"
  done
}

# config-f's step on synthetic data, the ZIP and the TFRecords at the same settings (data.workers at
# its default): img/s and the ms a step waits for its batch.
real_data_runs() {  # real_data_runs DIR
  local data record
  echo "| data | img/s | step ms | data_wait ms a step | share of the step |"
  echo "|---|---|---|---|---|"
  for data in synthetic "$1/real.zip" "$1/real-tfrecords"; do
    record="$1/bench-$(basename "$data").jsonl"
    budgeted_run "$1/bench-$(basename "$data").txt" "$build/bin/stylegan2_bench" "${real_bench[@]}" --data "$data" \
        --data.resolution "$real_resolution" --data.channels 3 --jsonl "$record"
    echo "| $(basename "$data") | $(field "$record" img_per_s 1 1) | $(field "$record" step_s 1000 1) |" \
         "$(field "$record" data_wait_s_per_step 1000 3) |" \
         "$(awk -v w="$(field "$record" data_wait_s_per_step)" -v s="$(field "$record" step_s)" \
              'BEGIN { if (w != "" && s != "") printf "%.3f %%", 100 * w / s; else printf "-" }') |"
  done
}

# The compute term at batches 4-32 and the bucket layout, then the model's predictions with it.
compute_term() {  # compute_term DIR SECONDS
  local device_env=()
  [ ${#dry_run[@]} -gt 0 ] && device_env=(DEVICE=cpu)
  env "${device_env[@]}" OUT="$1" SG2_BENCH_BUDGET_S="$2" SG2_RUN_LIMIT_S=60 \
    scripts/bench/gpu_compute_term.sh "$build" >> "$OUT/session.log" 2>&1
  echo "| per-GPU batch | step s | img/s |"
  echo "|---|---|---|"
  local batch record
  for batch in 4 8 16 32; do
    record=$1/compute-b$batch.jsonl
    [ -s "$record" ] || continue
    echo "| $(field "$record" rank_batch) | $(field "$record" step_s 1 4) | $(field "$record" img_per_s 1 1) |"
  done
  [ -s "$1/layout-config-f-256.jsonl" ] &&
    scripts/bench/scaling_model predict-gpu "$1/layout-config-f-256.jsonl" --measured "$1" --measured-fabric H100 \
        --out "$1/gpu_prediction.tsv" 2>&1 | sed 's/^/    /'
}

third_call() {
  local work quality_failed=0 datasets_ok=1
  work=$(mktemp -d)
  source scripts/bench/comparison_summary.sh  # field
  make_real_datasets "$work" >> "$OUT/session.log" 2>&1 &
  local datasets_job=$!
  run_kit "gpu_tests kernels_memcheck" 240 > "$work/kit.out" 2>&1 &
  local kit_job=$!
  scripts/bench/gpu_quality.sh "${dry_run[@]}" "$build" || quality_failed=1
  wait "$kit_job"
  local kit_status=$?
  cat "$work/kit.out"
  wait "$datasets_job" || datasets_ok=0
  # real_data_runs' clock: what is left less 140 s for the comparison and the compute term.
  run_clock_start third_call "$OUT/session.log" "$(($(seconds_left) - 140))" 90
  {
    echo "# The third call: real data and the compute term ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    if [ "$datasets_ok" = 1 ]; then
      echo "## The loader alone"
      echo
      loader_throughput "$work"
      echo
      echo "## config-f's step on real data"
      echo
      real_data_runs "$work"
    else
      echo "The real datasets failed (see session.log)."
    fi
  } >> "$OUT/session.md"
  SG2_BENCH_BASELINE=reference:32 SG2_BENCH_RUN_LIMIT_S=${SG2_BENCH_RUN_LIMIT_S:-75} \
    run_comparison "${SG2_THIRD_PRESETS:-config-f paper256}" "32:nhwc reference:32:nhwc 32:nhwc:graphs 32:off" \
    $(($(seconds_left) - 70)) || comparison_failed=1
  {
    echo
    echo "## The compute term"
    echo
    compute_term "$work/compute" $(($(seconds_left) - 5))
  } >> "$OUT/session.md"
  cat "$OUT/session.md"
  rm -rf "$work"
  kit_failed=$((kit_status + quality_failed))
}
