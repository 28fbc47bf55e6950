#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, turns Debian's Fashion-MNIST into a
# TFRecord dataset (data/fashion-mnist, all levels, as the original dataset_tool writes them), trains
# the fashion32 preset on it for a few minutes on the CPU, writes sample grids, measures FID every two
# ticks with the built-in feature detector (trained once on Fashion-MNIST's labels: no Inception file
# is needed offline), renders 64 seeds from the final snapshot and plots the run (losses, FID). Then
# adaptive discriminator augmentation on a small dataset: the first 2,000 images trained side by side
# with and without ADA (ADA_KIMG kimg each, default 24; ADA_KIMG=0 skips it), each final snapshot's
# fid5k_full measured against all 60,000 training images.
# Extra arguments go to the main stylegan2_train run (e.g. --kimg 60).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh --target stylegan2_train stylegan2_generate stylegan2_dataset stylegan2_metrics
bin=${BUILD_DIR:-build}/bin

data=data/fashion-mnist
if ! "$bin/stylegan2_dataset" info "$data" > /dev/null 2>&1; then
  rm -rf "$data"
  "$bin/stylegan2_dataset" create --source /usr/share/datasets/fashion-mnist --dest "$data"
fi
detector=data/fashion-mnist-detector.pt
if [ ! -f "$detector" ]; then
  "$bin/stylegan2_metrics" train-detector --data /usr/share/datasets/fashion-mnist --heldout-split test \
      --epochs 2 --out "$detector"
fi
# The run directory as the trainer names it (extra arguments may move it: --outdir, --run.desc, --resume).
train_log=$(mktemp)
trap 'rm -f "$train_log"' EXIT
"$bin/stylegan2_train" --config configs/fashion32.yaml --data "$data" --outdir runs \
    --metrics fid5k_full --detector "$detector" --metric.ticks 2 --metric.cache_dir data/metric-cache "$@" |
  tee "$train_log"
run_dir=$(sed -n 's/^Run directory: //p' "$train_log" | head -n 1)
[ -d "$run_dir" ] || { echo "quickstart: stylegan2_train named no run directory" >&2; exit 1; }
snapshot=$(ls "$run_dir"/network-snapshot-*.pt | sort -V | tail -n 1)
"$bin/stylegan2_generate" --network "$snapshot" --seeds 0-63 --trunc 1 --outdir "$run_dir/generated"
scripts/plot_stats "$run_dir" --out "$run_dir/plots" > /dev/null
fid=$(tail -n 1 "$run_dir/metric-fid5k_full.jsonl" | sed -E 's/.*"fid5k_full":([0-9.eE+-]+).*/\1/')

echo
echo "Run directory: $run_dir"
echo "  sample grids: $(cd "$run_dir" && ls fakes*.png | tr '\n' ' ')"
echo "  final grid:   $run_dir/$(cd "$run_dir" && ls fakes[0-9]*.png | sort -V | tail -n 1)"
echo "  64 seeds:     $run_dir/generated/grid.png"
echo "  plots:        $run_dir/plots/ (losses, fid5k_full, timing)"
echo "  fid5k_full:   $fid (built-in Fashion-MNIST detector $detector; every value in $run_dir/metric-fid5k_full.jsonl)"
echo "  snapshot:     $snapshot (resume with: $bin/stylegan2_train --resume $run_dir)"

# ADA on 2,000 images. augment.kimg 10: p can cross [0, 1] within the run (500, the default, is sized
# for runs of thousands of kimg).
ada_kimg=${ADA_KIMG:-24}
[ "$ada_kimg" != 0 ] || exit 0
echo
echo "ADA on the first 2,000 images, $ada_kimg kimg with and without it:"
for aug in noaug ada; do
  "$bin/stylegan2_train" --config configs/fashion32.yaml --data "$data" --data.max_images 2000 \
      --outdir runs/ada-2k --run.desc "fashion2k-$aug" --aug "$aug" --augment.kimg 10 --kimg "$ada_kimg" \
      --run.image_snapshot_ticks 4 --run.network_snapshot_ticks 0 > "$train_log" 2>&1 ||
    { cat "$train_log"; exit 1; }
  dir=$(sed -n 's/^.*Run directory: //p' "$train_log" | head -n 1)
  final=$(ls "$dir"/network-snapshot-*.pt | sort -V | tail -n 1)
  "$bin/stylegan2_metrics" --network "$final" --data "$data" --data.max_images 0 --metrics fid5k_full \
      --detector "$detector" --metric.cache_dir data/metric-cache > /dev/null
  fid=$(tail -n 1 "$dir/metric-fid5k_full.jsonl" | sed -E 's/.*"fid5k_full":([0-9.eE+-]+).*/\1/')
  p=$(grep -o 'augment [0-9.]*' "$dir/log.txt" | tail -n 1 | cut -d' ' -f2)
  echo "  --aug $aug:$([ "$aug" = ada ] && echo "  " || echo "") fid5k_full $fid against all 60,000 images, final p $p ($dir)"
done
