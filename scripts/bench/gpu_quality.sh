#!/usr/bin/env bash
# Quality at speed: this project's training with its fast settings (float16 in the 4 highest
# resolutions, its CUDA kernels, the float16 blocks channels_last, every phase replayed from a CUDA
# graph) against stylegan2-ada-pytorch's own train.py with its float16, at the same hyper-parameters
# and kimg, on Fashion-MNIST rendered at 64x64 RGB: FID of every run's snapshots by one evaluator
# (stylegan2_metrics with a built-in detector trained here; the reference's pickles through
# export_pkl.py and stylegan2_import). Ours stops at SG2_QUALITY_RESUME_KIMG and resumes from its
# snapshot on the GPU, so its curve crosses a resume. All runs share the GPU and train at once within
# SG2_QUALITY_TRAIN_S, so their speeds here are no comparison (gpu_vs_reference.sh's are).
# The hyper-parameters are those train.py --cfg auto picks at 64x64 on one GPU: batch 32 in one
# round, channel_base 16384 (max 512), mapping 2 layers, mbstd 4, lr 0.0025, R1 gamma 0.0256, EMA 10
# kimg with ramp-up 0.05, num_fp16_res 4, conv_clamp 256, no augmentation, no flips.
# Writes $OUT/quality.md (FID by kimg, the reference seeds' spread) and quality.log (every run's
# log, then each value as it comes).
#   OUT=$OUT scripts/bench/gpu_quality.sh [BUILD_DIR] [REFERENCE_DIR]    (the GPU kit's build: build-gpu)
#   scripts/bench/gpu_quality.sh --cpu-dry-run [BUILD_DIR] [REFERENCE_DIR]  (tiny and short, the reference's
#     loop on the CPU: reference_train.py --cpu-loop)
# SG2_QUALITY_TRAIN_S (default 210) the trainings' time, SG2_QUALITY_KIMG (64) where they stop
# otherwise, SG2_QUALITY_RESUME_KIMG (16), SG2_QUALITY_EVERY (4: kimg between evaluated
# snapshots, a multiple of the reference's tick of 4),
# SG2_QUALITY_METRIC (fid10k_full), SG2_QUALITY_SEEDS ("0 1": the reference's), SG2_QUALITY_PARALLEL
# (6 evaluations at once), SG2_QUALITY_EVAL_S (100: no evaluation starts after that),
# SG2_FASHION_MNIST (/usr/share/datasets/fashion-mnist).
set -uo pipefail
cd "$(dirname "$0")/../.."
device=cuda
if [ "${1:-}" = --cpu-dry-run ]; then device=cpu; shift; fi
build=${1:-${GPU_BUILD_DIR:-build-gpu}}
ref=${2:-.gpu-kit/stylegan2-ada-pytorch}
out=${OUT:-$PWD/gpu-results}
python=${PYTHON:-python3}
fashion=${SG2_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
train_seconds=${SG2_QUALITY_TRAIN_S:-210}
kimg=${SG2_QUALITY_KIMG:-64}
resume_kimg=${SG2_QUALITY_RESUME_KIMG:-16}
every=${SG2_QUALITY_EVERY:-4}
metric=${SG2_QUALITY_METRIC:-fid10k_full}
seeds=${SG2_QUALITY_SEEDS:-0 1}
work=$(mktemp -d)
mkdir -p "$out"
log="$out/quality.log"
: > "$log"
export PYTHONUNBUFFERED=1
# The reference's plugins: built there already (scripts/gpu/session.sh starts their build first), else
# by the first training, in a folder of this call's (no lock left by an earlier, killed call).
export TORCH_EXTENSIONS_DIR="${SG2_TORCH_EXTENSIONS_DIR:-$work/torch_extensions}"
say() { echo "== quality: $*" | tee -a "$log"; }
[ -d "$ref/training" ] || { say "no stylegan2-ada-pytorch checkout at $ref"; exit 1; }
source scripts/gpu/kit_steps.sh  # ensure_build, metric_value
if [ "$device" = cuda ]; then  # on a fresh machine as well: the kit's binaries, or a build
  ensure_build "$build" >> "$log" 2>&1 || { say "no build in $build (see $log)"; exit 1; }
fi
bin=$build/bin

hyper=(--config config-f --G.channel_base 16384 --D.channel_base 16384 --G.channel_max 512 --D.channel_max 512
       --G.mapping_layers 2 --train.batch 32 --train.batch_gpu 32 --D.mbstd_group_size 4 --optim.G_lr 0.0025
       --optim.D_lr 0.0025 --loss.r1_gamma 0.0256 --train.ema_kimg 10 --train.ema_rampup 0.05 --data.mirror false
       --G.num_fp16_res 4 --D.num_fp16_res 4 --G.conv_clamp 256 --D.conv_clamp 256)
fast=(--run.device cuda --run.channels_last reduced) graphs=(--run.cuda_graphs true)
ticks=(--train.kimg_per_tick 4 --run.network_snapshot_ticks 1 --run.image_snapshot_ticks 0)
reference=(--gpus 1 --cfg auto --aug noaug --metrics none --snap $((every / 4 > 0 ? every / 4 : 1)))
data_limit=() detector_limit=(--epochs 2 --max-images 30000)
if [ "$device" = cpu ]; then  # a dry run: tiny float32 networks, a few hundred images, kimg in images
  hyper+=(--G.channel_base 512 --D.channel_base 512 --G.channel_max 32 --D.channel_max 32 --G.z_dim 32
          --G.w_dim 32 --train.batch 8 --train.batch_gpu 8)
  fast=(--run.device cpu --run.threads 2) graphs=()
  ticks=(--train.kimg_per_tick 0.016 --run.network_snapshot_ticks 1 --run.image_snapshot_ticks 0)
  kimg=0.048 resume_kimg=0.032 metric=fid100_full every=0
  data_limit=(--max-images 512) detector_limit=(--epochs 1 --max-images 1000)
fi

# The dataset (the reference reads the same ZIP) and the detector, at once.
say "Fashion-MNIST at 64x64 RGB, and the built-in detector"
"$bin/stylegan2_dataset" create --source "$fashion" --dest "$work/fm64.zip" --resolution 64 --channels 3 \
    --workers 8 "${data_limit[@]}" >> "$log" 2>&1 &
dataset_job=$!
"$bin/stylegan2_metrics" train-detector --data "$fashion" "${detector_limit[@]}" --out "$work/detector.pt" \
    >> "$log" 2>&1 &
detector_job=$!
wait "$dataset_job" || { say "the dataset failed (see $log)"; kill "$detector_job" 2> /dev/null; exit 1; }
data=$work/fm64.zip detector=$work/detector.pt

# The trainings, at once, within train_seconds: ours to resume_kimg and on from its snapshot, the
# reference for each seed.
deadline=$(($(date +%s) + train_seconds))
seconds_left() { local left=$((deadline - $(date +%s))); echo $((left > 1 ? left : 1)); }
train_ours_leg() {  # train_ours_leg FLAGS...: the first leg, to resume_kimg
  rm -rf "$work/ours"
  timeout --kill-after=15 "$(seconds_left)" "$bin/stylegan2_train" "${hyper[@]}" "$@" "${ticks[@]}" \
      --data "$data" --outdir "$work/ours" --seed 0 --kimg "$resume_kimg" >> "$work/ours.log" 2>&1
}
train_ours() {
  say "ours, seed 0, to $resume_kimg kimg"
  if ! train_ours_leg "${fast[@]}" "${graphs[@]}"; then
    [ ${#graphs[@]} -gt 0 ] && [ "$(seconds_left)" -gt 60 ] || return 1
    say "ours FAILED with run.cuda_graphs (see its log); again without"
    train_ours_leg "${fast[@]}" || return 1
  fi
  say "ours resumed from its $resume_kimg-kimg snapshot, to $kimg kimg"
  timeout --kill-after=15 "$(seconds_left)" "$bin/stylegan2_train" --resume "$(ls -d "$work"/ours/00000-*)" \
      --kimg "$kimg" >> "$work/ours.log" 2>&1
  local status=$?
  [ "$status" = 124 ] && say "ours stopped at the trainings' time limit"
  return $((status == 124 ? 0 : status))
}
train_reference() {  # train_reference SEED
  local whole_kimg=${kimg%.*}  # train.py takes whole kimg, at least 1
  local args=(--outdir "$work/reference-$1" --data "$data" "${reference[@]}" --kimg $((whole_kimg > 0 ? whole_kimg : 1))
              --seed "$1")
  mkdir -p "$work/reference-$1"
  local loop=()
  [ "$device" = cpu ] && loop=(--cpu-loop)  # the dry run: its loop on the CPU, tiny and two steps
  timeout -s INT --kill-after=15 "$(seconds_left)" "$python" scripts/bench/reference_train.py --ref "$ref" \
      "${loop[@]}" -- "${args[@]}" >> "$work/reference-$1.log" 2>&1
  local status=$?
  return $((status == 124 ? 0 : status))
}
train_ours &
jobs_running=($!)
for seed in $seeds; do
  say "stylegan2-ada-pytorch train.py, seed $seed, to $kimg kimg"
  train_reference "$seed" &
  jobs_running+=($!)
  sleep 3  # the seeds do not copy the reference's plugin sources into the same folder at once
done
training_failures=0
for job in "${jobs_running[@]}"; do wait "$job" || training_failures=$((training_failures + 1)); done
for run_log in "$work"/*.log; do
  { echo "--- $(basename "$run_log")"; cat "$run_log"; } >> "$log"
done
[ "$training_failures" = 0 ] || say "$training_failures training(s) failed (their logs are in $log)"
wait "$detector_job" || { say "the detector failed (see $log)"; exit 1; }

# The curves, lowest kimg first for every run, within SG2_QUALITY_EVAL_S (default 100 s; the
# evaluations started by then finish), each value in the log as it comes ("value: RUN KIMG FID").
source scripts/bench/quality_curves.sh
export SG2_QUALITY_EVAL_UNTIL=$(($(date +%s) + ${SG2_QUALITY_EVAL_S:-100}))
evaluate_all "$work" "$every" "$metric" | tee "$work/fid.tsv" | sed 's/^/value: /' >> "$log"
quality_table "$work/fid.tsv" "$metric" "$resume_kimg" "$seeds" > "$out/quality.md"
tee -a "$log" < "$out/quality.md"
rm -rf "$work"
[ "$training_failures" = 0 ]
