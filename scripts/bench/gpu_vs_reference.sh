#!/usr/bin/env bash
# This project against stylegan2-ada-pytorch on the same GPU, side by side in one call:
# config-f at 256x256 (the reference's 'stylegan2' configuration: its mixed precision, batch 32 in
# rounds of 4) and paper256 (batch 64 in rounds of 8), each timed by
#   - scripts/bench/reference_bench.py: the reference's own networks and loss, at its defaults
#     (num_fp16_res 4, conv_clamp 256, batch_gpu = batch / 8, cuDNN benchmark on, TF32 off);
#   - stylegan2_bench with the same precision and rounds, with train.batch_gpu auto, and each of
#     those with the float16 blocks channels_last (run.channels_last reduced).
# Then, where the budget allows, the reference in one round of the whole batch (batch_gpu = batch, as
# `train.py --batch 32 --gpus 1` would run it): the speed its defaults leave unused on one GPU, and
# the comparison at an equal per-round batch for our probed one. Each ratio is to the reference at
# its defaults; the summary then says whether the speed goals are met (the best of ours at 2x the
# reference's img/s; config-f at 5 s/kimg or less, in the reference's float16 settings).
# Prints every table and a summary of img/s, s/kimg, peak memory, the host's ms a step (how long it
# took to issue the steps: well under the step's time, the GPU bounds it; stylegan2_bench's README
# paragraph says how to read it otherwise) and ratios into
# $OUT/gpu_vs_reference.log and .md (default gpu-results/), both written as each run goes, so a call
# cut off by its time limit still returns what ran. Each run stops after SG2_BENCH_RUN_LIMIT_S (default
# 240 s) or at what is left of SG2_BENCH_BUDGET_S (default 560 s, inside a device call's 600), the runs
# after a spent budget are skipped, and the variant most likely fastest runs right after the reference.
# Needs .gpu-kit (scripts/gpu/prepare.sh): its stylegan2-ada-pytorch checkout, and its prebuilt
# binaries or packages for a build into BUILD_DIR where that has none (a fresh machine).
#   scripts/bench/gpu_vs_reference.sh [BUILD_DIR] [REFERENCE_DIR]
#   SG2_BENCH_PRESETS=config-f scripts/bench/gpu_vs_reference.sh   # one preset
#   SG2_BENCH_VARIANTS="auto:nhwc ref:off" ...   # some of ours (default all: auto:nhwc auto:nhwc:3xtf32
#                                                # auto:nhwc:graphs ref:off ref:off:graphs auto:off ref:nhwc reference:full
#                                                # auto:nhwc:nogradfix auto:all; ref: the
#                                                # reference's batch_gpu, nhwc: channels_last reduced, all:
#                                                # channels_last all; reference:full the reference in one
#                                                # round; nogradfix: run.conv2d_gradfix false;
#                                                # 3xtf32: run.float32_convolutions 3xtf32, its own goal line;
#                                                # graphs: run.cuda_graphs true, auto:nhwc:graphs and ref:off:graphs)
#   SG2_TORCH_EXTENSIONS_DIR=DIR ...   # the reference's plugins built there already (reference_bench.py
#                                      # --build-plugins, started earlier in the call: scripts/gpu/session.sh)
#   scripts/bench/gpu_vs_reference.sh --cpu-dry-run     # the same runs on the CPU, tiny and short
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/bench/run_budget.sh
device=cuda
if [ "${1:-}" = --cpu-dry-run ]; then device=cpu; shift; fi
build=${1:-build-gpu}
ref=${2:-.gpu-kit/stylegan2-ada-pytorch}
out=${OUT:-$PWD/gpu-results}
python=${PYTHON:-python3}
bench="$build/bin/stylegan2_bench"
[ -d "$ref/training" ] || { echo "gpu_vs_reference: no stylegan2-ada-pytorch checkout at $ref" >&2; exit 1; }
mkdir -p "$out"
cases_dir=$(mktemp -d)  # each run's output; all of it also goes to the log (a device call returns 8 files)
trap 'rm -rf "$cases_dir"' EXIT
export PYTHONUNBUFFERED=1                              # the reference's lines reach the log as they come
# The reference's plugins: in a folder of this call's (no lock left by an earlier, killed call).
export TORCH_EXTENSIONS_DIR="${SG2_TORCH_EXTENSIONS_DIR:-$cases_dir/torch_extensions}"
log="$out/gpu_vs_reference.log"
: > "$log"
run_clock_start gpu_vs_reference "$log" "${SG2_BENCH_BUDGET_S:-560}" "${SG2_BENCH_RUN_LIMIT_S:-240}"
if [ "$device" = cuda ]; then  # on a fresh machine as well: the kit's binaries, or a build
  source scripts/gpu/kit_steps.sh
  ensure_build "$build" >> "$log" 2>&1 || { echo "gpu_vs_reference: no build in $build (see $log)" >&2; exit 1; }
fi
[ -x "$bench" ] || { echo "gpu_vs_reference: no $bench (build first: scripts/gpu/run.sh)" >&2; exit 1; }

# preset | extra flags of ours (the reference's settings) | the reference's batch_gpu | its batch
all_cases=(
  "config-f|${config_f_precision[*]}|4|32"
  "paper256||8|64"
)
# SG2_BENCH_PRESETS="config-f" (or paper256) times one preset: a device call is 10 minutes at most.
presets=${SG2_BENCH_PRESETS:-config-f paper256}
cases=()
for case in "${all_cases[@]}"; do
  [[ " $presets " == *" ${case%%|*} "* ]] && cases+=("$case")
done
[ "${#cases[@]}" -gt 0 ] || { echo "gpu_vs_reference: no preset among '$presets' (config-f, paper256)" >&2; exit 2; }
# Ours: BATCH_GPU:LAYOUT[:nogradfix|3xtf32|graphs], with ref for the reference's per-round batch, nhwc for
# channels_last in the float16 blocks (all: in the float32 blocks too, cuDNN's FFMA kernels then
# NHWC) and nogradfix for LibTorch's own double backward of the convolutions (the A/B of
# run.conv2d_gradfix), graphs for run.cuda_graphs true (each phase replayed from a CUDA graph: the
# host's launches, which bound the small per-round batches, gone; skipped in the CPU dry run). The default order puts first the variant most likely fastest (the goal of
# 5 s/kimg for config-f), the probed batch channels_last, right after the reference.
all_variants="auto:nhwc auto:nhwc:3xtf32 auto:nhwc:graphs ref:off ref:off:graphs auto:off ref:nhwc reference:full
              auto:nhwc:nogradfix auto:all"
all_variants=$(echo $all_variants)  # one line
variants=${SG2_BENCH_VARIANTS:-$all_variants}
# Besides those: any per-round batch of ours (32:off, 32:nhwc:graphs) and the reference at any
# (reference:ref, its defaults; reference:full, one round; reference:32; :nhwc its fp16_channels_last).
variant_pattern='^((auto|ref|[0-9]+):(off|nhwc|all)(:(nogradfix|3xtf32|graphs))?|reference:(ref|full|[0-9]+)(:nhwc)?)$'
for variant in $variants ${SG2_BENCH_BASELINE:-}; do
  [[ "$variant" =~ $variant_pattern ]] ||
    { echo "gpu_vs_reference: no variant '$variant' (one of: $all_variants, or as $variant_pattern)" >&2; exit 2; }
done
# The variant most likely fastest adds --device-kernels: one more cycle under the Kineto profiler, after
# the timed ones: GPU time by kernel and how busy the GPU is (the numbers to tune by next).
common=(--data synthetic --data.resolution 256 --data.channels 3 --run.device "$device" --no-op-families)
profiled=(--device-kernels)
nhwc=reduced
ref_common=(--device "$device" --resolution 256 --channels 3 --warmup 2 --repeats 2 --fp16-res 4 --threads 8)
if [ "$device" = cpu ]; then  # a dry run: tiny float32 networks (float16 convolutions crawl on a CPU)
  common=(--data synthetic --data.resolution 16 --data.channels 3 --run.device cpu --no-op-families "${tiny_bench[@]}")
  profiled=()
  ref_common=(--device cpu --batch 8 --channel-base 256 --resolution 16 --channels 3 --warmup 1 --repeats 1
              --fp16-res 0 --threads 2)
  nhwc=all
fi

source scripts/bench/comparison_summary.sh  # field, ratio, meets, the H100 SXM estimate

# The reference: its runs, and a summary row with the ratio of its img/s to ref_rate.
run_reference() {  # run_reference PRESET CONFIG BATCH_GPU NAME LABEL [REFERENCE_BENCH_FLAGS...]
  local file="$cases_dir/$4.txt" record="$cases_dir/$4.jsonl" label=$5 rate
  echo "== $1: $label, batch_gpu $3" | tee -a "$log"
  rm -f "$record"
  budgeted_run "$file" "$python" scripts/bench/reference_bench.py --ref "$ref" --config "$2" "${ref_common[@]}" \
      --conv-clamp 256 --batch-gpu "$3" --jsonl "$record" "${@:6}"
  rate=$(field "$record" img_per_s 1 2)
  [ "$(field "$record" plugins_fell_back)" = true ] && label="$label (plugins fell back: not its real speed)"
  echo "| $1 | $label | $3 | $rate | $(field "$record" s_per_kimg 1 2) | $(field "$record" peak_device_gib 1 2) | - |" \
       "$(ratio "$rate" "${ref_rate:-$rate}") |" >> "$summary"
  last_rate=$rate
}

# A per-round batch as this run takes it: a number is 8 in the dry run (its tiny networks' batch).
dry_run_batch() {  # dry_run_batch BATCH
  if [ "$device" = cpu ] && [[ "$1" =~ ^[0-9]+$ ]]; then echo 8; else echo "$1"; fi
}

# The reference at a per-round batch (reference:ref|full|N[:nhwc]); its rate is kept for the lines at
# equal settings.
run_reference_variant() {  # run_reference_variant VARIANT
  local batch layout name label extra=()
  IFS=':' read -r _ batch layout <<< "$1"
  case "$batch" in
    ref) batch=$ref_batch_gpu label="stylegan2-ada-pytorch, its defaults" ;;
    full) batch=$full_batch label="stylegan2-ada-pytorch, one round" ;;
    *) batch=$(dry_run_batch "$batch") label="stylegan2-ada-pytorch" ;;
  esac
  name="$preset-reference-$batch"
  if [ "$layout" = nhwc ]; then
    name="$name-nhwc" label="$label, fp16_channels_last" extra=(--nhwc)
  fi
  if [ -e "$cases_dir/$name.txt" ]; then
    echo "== $preset: $label, batch_gpu $batch: ran already" | tee -a "$log"
    last_rate=$(field "$cases_dir/$name.jsonl" img_per_s 1 2)
    return 0
  fi
  run_reference "$preset" "$config" "$batch" "$name" "$label" "${extra[@]}"
  reference_rates["$batch:${layout:-off}"]=$last_rate
}

# What ran at equal settings: each of ours (no option, or graphs) against the reference at the same
# per-round batch and layout of the float16 blocks.
equal_settings_lines() {
  local key rate option
  for key in "${!ours_rates[@]}"; do
    IFS=':' read -r _ _ option <<< "$key"
    rate=${reference_rates["${key%:*}"]:-}
    [ -n "$rate" ] && [ -n "${ours_rates[$key]}" ] || continue
    echo "- $preset at equal settings, ${key%%:*} images a round, $( [[ "$key" == *:nhwc:* ]] &&
      echo "float16 blocks channels_last" || echo NCHW)$( [ "$option" = graphs ] && echo ", ours with CUDA graphs"): \
ours ${ours_rates[$key]} img/s, the reference $rate: $(ratio "${ours_rates[$key]}" "$rate")x"
  done | sort
}

# One variant of ours (BATCH_GPU:LAYOUT[:OPTION]) of the case being run: its run and summary row;
# sets rate, and the rates the goals read.
run_ours() {  # run_ours VARIANT
  local variant=$1 batch_gpu layout option name label chosen record extra=()
  IFS=':' read -r batch_gpu layout option <<< "$variant"
  [ "$batch_gpu" = ref ] && batch_gpu=$ref_batch_gpu
  batch_gpu=$(dry_run_batch "$batch_gpu")
  local rate_key="$batch_gpu:$layout:${option:-plain}"
  [ "$layout" = nhwc ] && layout=$nhwc
  name="$preset-ours-$batch_gpu"
  label="stylegan2-cpp"
  [ "$layout" = off ] || { name="$name-channels-last-$layout"; label="$label, channels_last $layout"; }
  local probed_nhwc=0  # the goal's run: profiled
  [ "$variant" = auto:nhwc ] && probed_nhwc=1
  [ "$probed_nhwc" = 1 ] && extra=("${profiled[@]}")
  if [ "$option" = nogradfix ]; then
    name="$name-nogradfix" label="$label, conv2d_gradfix off"
    extra=(--run.conv2d_gradfix false)
  elif [ "$option" = 3xtf32 ]; then
    name="$name-3xtf32" label="$label, float32 convolutions 3xTF32"
    extra=(--run.float32_convolutions 3xtf32)
  elif [ "$option" = graphs ]; then
    name="$name-graphs" label="$label, CUDA graphs"
    extra=(--run.cuda_graphs true)
    if [ "$device" = cpu ]; then
      echo "== $preset: $label, train.batch_gpu $batch_gpu: CUDA graphs need a GPU, skipped in the dry run" | tee -a "$log"
      rate="" ran=0
      return 0
    fi
  fi
  rate="" ran=0
  if [ -e "$cases_dir/$name.txt" ]; then  # the dry run's nhwc is all: auto:nhwc and auto:all are one run
    echo "== $preset: $label, train.batch_gpu $batch_gpu: ran already" | tee -a "$log"
    return 0
  fi
  echo "== $preset: $label, train.batch_gpu $batch_gpu" | tee -a "$log"
  # Whether it runs: budgeted_run skips it where the budget is spent.
  [ "$(run_seconds_left "$run_start" "$run_budget" "$run_limit" "$run_min")" -gt 0 ] && ran=1
  record="$cases_dir/$name.jsonl"
  rm -f "$record"
  budgeted_run "$cases_dir/$name.txt" "$bench" --config "$config" "${common[@]}" "${ours[@]}" --jsonl "$record" \
      --train.batch_gpu "$batch_gpu" --run.channels_last "$layout" "${extra[@]}"
  rate=$(field "$record" img_per_s 1 2)
  [ "$batch_gpu" = auto ] && chosen=$(field "$record" batch_gpu)
  echo "| $preset | $label | $batch_gpu${chosen:+: $chosen} | $rate | $(field "$record" s_per_kimg 1 2) |" \
       "$(field "$record" peak_device_gib 1 2) | $(host_ms_per_step "$record") |" \
       "$(ratio "$rate" "$ref_rate") |" >> "$summary"
  if [ "$batch_gpu" = auto ] && [ -z "$option" ] && [ -n "$rate" ] && [ -z "$auto_rate" ]; then
    auto_rate=$rate auto_batch=$chosen
  fi
  [ "$probed_nhwc" = 1 ] && [ -n "$rate" ] && : "${probed_nhwc_rate:=$rate}" \
      "${probed_nhwc_kimg:=$(field "$record" s_per_kimg 1 2)}" "${other_ms:=$(other_kernel_ms "$record")}"
  [[ "$rate_key" =~ :(plain|graphs)$ ]] && ours_rates["$rate_key"]=$rate
  [ "$option" = nogradfix ] && nogradfix_rate=$rate
  [ "$variant" = ref:off ] && ref_off_rate=$rate
  [ "$variant" = ref:off:graphs ] && ref_graphs_rate=$rate
  [ "$variant" = auto:nhwc:graphs ] && auto_graphs_rate=$rate
  # 3xTF32 keeps float32's accuracy but not the reference's arithmetic: a goal line of its own.
  [ "$option" = 3xtf32 ] && { split_rate=$rate split_kimg=$(field "$record" s_per_kimg 1 2); return 0; }
  if [ -n "$rate" ] && awk -v a="$rate" -v b="${best_rate:-0}" 'BEGIN {exit !(a > b)}'; then
    best_rate=$rate best_kimg=$(field "$record" s_per_kimg 1 2)
  fi
  return 0
}

summary="$out/gpu_vs_reference.md"
{
  echo "| preset | implementation | batch_gpu | img/s | s/kimg | peak GiB | host ms a step | vs reference |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$summary"
goals=()
bandwidth_ratio=""  # an H200's against an H100 SXM's, for config-f's estimate there
[ "$device" = cuda ] &&
  bandwidth_ratio=$(h100_bandwidth_ratio "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)")
for case in "${cases[@]}"; do
  IFS='|' read -r preset ours_flags ref_batch_gpu full_batch <<< "$case"
  config="configs/$preset.yaml"
  read -ra ours <<< "$ours_flags"
  ref_batch_gpu=$(dry_run_batch "$ref_batch_gpu") full_batch=$(dry_run_batch "$full_batch")
  ref_rate=""
  declare -A reference_rates=() ours_rates=()
  run_reference_variant "${SG2_BENCH_BASELINE:-reference:ref}"  # the ratio column's reference
  ref_rate=$last_rate
  # Ours: the reference's per-round batch, the probed one, and each with the float16 blocks
  # channels_last (run.channels_last reduced, which the reference has as fp16_channels_last, off by
  # default and in its timed run; the dry run's float32 blocks need all).
  best_rate="" best_kimg="" auto_rate="" auto_batch="" full_rate="" nogradfix_rate="" probed_nhwc_rate=""
  split_rate="" split_kimg="" ref_off_rate="" ref_graphs_rate="" auto_graphs_rate="" other_ms="" probed_nhwc_kimg=""
  for variant in $variants; do
    if [[ "$variant" == reference:* ]]; then
      run_reference_variant "$variant"
      [ "$variant" = reference:full ] && full_rate=$last_rate
      continue
    fi
    run_ours "$variant"
  done
  best_ratio=$(ratio "$best_rate" "$ref_rate")
  baseline=${SG2_BENCH_BASELINE:-reference:ref}
  [ "$baseline" = reference:ref ] && baseline="at its defaults" || baseline="as $baseline"
  goals+=("- $preset: the best of ours, ${best_rate:--} img/s, is ${best_ratio}x the reference $baseline (goal \
2x: $(meets "$best_ratio" ">=" 2))")
  [ "$preset" = config-f ] && goals+=("- config-f: the best of ours takes ${best_kimg:--} s/kimg (goal 5 s/kimg or \
less: $(meets "$best_kimg" "<=" 5))")
  if [ "$preset" = config-f ] && [ -n "$bandwidth_ratio" ] && [ -n "$other_ms" ] && [ -n "$best_kimg" ]; then
    h100_kimg=$(slowed_kimg "$best_kimg" "$bandwidth_ratio" "$other_ms" "$full_batch")
    goals+=("- config-f on an H100 SXM, estimated from this H200: the profiled step's kernels other than \
convolutions and matrix products took $other_ms ms; with them ${bandwidth_ratio}x as long (4.8 against 3.35 TB/s) and \
the convolutions as long, the best of ours would take $h100_kimg s/kimg (goal 5 s/kimg or less: \
$(meets "$h100_kimg" "<=" 5)), the profiled run, ours probed channels_last, \
$(slowed_kimg "$probed_nhwc_kimg" "$bandwidth_ratio" "$other_ms" "$full_batch") s/kimg; an estimate, not a measurement")
  fi
  if [ -n "$full_rate" ] && [ -n "$auto_rate" ]; then
    goals+=("- $preset at an equal per-round batch: ours probed (${auto_batch:-?} images a round) against the reference \
in one round of $full_batch: $(ratio "$auto_rate" "$full_rate")x")
  fi
  mapfile -t equal_lines < <(equal_settings_lines)
  goals+=("${equal_lines[@]}")
  if [ -n "$split_rate" ]; then
    goals+=("- $preset with run.float32_convolutions 3xtf32 (the float32 blocks in three TF32 passes, float32's \
accuracy): ${split_kimg:--} s/kimg, $(ratio "$split_rate" "$probed_nhwc_rate")x ours probed channels_last without")
  fi
  if [ -n "$auto_graphs_rate$ref_graphs_rate" ]; then
    goals+=("- $preset with run.cuda_graphs true against without: ours probed, channels_last \
$(ratio "$auto_graphs_rate" "$probed_nhwc_rate")x; at the reference's per-round batch $(ratio "$ref_graphs_rate" "$ref_off_rate")x")
  fi
  if [ -n "$nogradfix_rate" ] && [ -n "$probed_nhwc_rate" ]; then
    goals+=("- $preset: ours probed, channels_last, with conv2d_gradfix against without: \
$(ratio "$probed_nhwc_rate" "$nogradfix_rate")x")
  fi
done
conditions="in the reference's default precision: float16 in the 4 highest resolutions, conv_clamp 256"
[ "$device" = cpu ] && conditions="a CPU dry run: tiny float32 networks, not the goals' conditions"
{
  echo
  echo "Goals ($device; $conditions):"
  printf '%s\n' "${goals[@]}"
} >> "$summary"
echo "== summary ($device)"
cat "$summary"
[ "$run_failures" -eq 0 ] || { echo "gpu_vs_reference: $run_failures run(s) failed (see $log)" >&2; exit 1; }
