#!/usr/bin/env bash
# What the augmentation costs a training step, side by side on one machine: stylegan2_bench on one
# preset (default paper256 at batch 4, synthetic data) without augmentation, then with the bgc
# pipeline at p 0 (ADA's start: every transform is still computed, as the identity) and at a fixed
# p (default 0.6, about where ADA settles on small datasets). Prints each step time and the share of
# the augmented step the pipeline takes, read from the --jsonl records.
#   scripts/bench/augment_cost.sh [CONFIG] [BATCH] [P]
set -euo pipefail
cd "$(dirname "$0")/../.."
config=${1:-configs/paper256.yaml}
batch=${2:-4}
p=${3:-0.6}
threads=${THREADS:-$(nproc)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bench() {  # bench NAME OPTION...
  local name=$1; shift
  echo "== $name"
  "${BUILD_DIR:-build}/bin/stylegan2_bench" --config "$config" --data synthetic --batch "$batch" --run.threads "$threads" \
      --no-op-families --jsonl "$out/$name.jsonl" "$@" | grep -E "^(phase|Gmain|Greg|Dmain|Dreg|step) "
}
bench noaug --aug noaug
bench p0 --aug fixed --p 0
bench "p$p" --aug fixed --p "$p"
source scripts/bench/comparison_summary.sh  # field, ratio
base=$(field "$out/noaug.jsonl" img_per_s 1 4)
echo "== $config, batch $batch, $threads threads, $(uname -m): img/s and the augmentation's share of a step"
for name in noaug p0 "p$p"; do
  rate=$(field "$out/$name.jsonl" img_per_s 1 4)
  echo "$name: $rate img/s, step $(ratio "$base" "$rate") x noaug's, augmentation $(awk -v a="$rate" -v b="$base" \
       'BEGIN {if (a > 0 && b > 0) printf "%.1f%%", 100 * (1 - a / b); else printf "-"}') of the step"
done
