#!/usr/bin/env bash
# Pretrained weights and generation end to end: the reference state dict of a parity fixture is
# imported with stylegan2_import, rendered with stylegan2_generate from the fixture's own latents
# (noise const) and compared with the fixture's out.img; then style mixing, interpolation frames, a
# mismatched configuration, and fine-tuning the import with stylegan2_train --resume.
# Usage: import_generate.sh BIN_DIR TESTS_BIN_DIR FIXTURE.pt FIXTURE.json [FINE_TUNE_OPTION...]
#   (exit 77: no fixture; FINE_TUNE_OPTIONs go to stylegan2_train, e.g. a batch the fixture's mbstd
#   group divides)
set -euo pipefail
bin=$1 tests_bin=$2 fixture=$3 fixture_json=$4
shift 4
[ -f "$fixture" ] || { echo "SKIP: no fixture $fixture"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/stylegan2_import" --state-dict "$fixture" --config "$fixture_json" --out "$work/imported.pt" > "$work/import.log" ||
  { cat "$work/import.log"; fail "import"; }
grep -q "no G_ema.\* tensors: G_ema is a copy of G" "$work/import.log" || fail "import did not report the missing G_ema"

"$tests_bin/fixture_images" latents "$fixture" "$work/z.npy"
"$bin/stylegan2_generate" --network "$work/imported.pt" --latents "$work/z.npy" --noise-mode const --trunc 1 \
    --outdir "$work/gen" > /dev/null
"$tests_bin/fixture_images" compare "$fixture" "$work/gen" || fail "rendered images differ from the fixture's out.img"

# Style mixing (3 rows x 2 columns plus the header row and column; coarse styles 0-3 from the
# columns, then every style) and interpolation ((3 - 1) * 4 + 1 frames), checked cell by cell and
# frame by frame against single renders of the same seeds.
generate() { "$bin/stylegan2_generate" --network "$work/imported.pt" "$@" > /dev/null; }
generate --seeds 1,2,3,7,8 --outdir "$work/grids/seeds"
generate --seeds 1,2,3 --mix-columns 7,8 --styles 0-3 --outdir "$work/grids/mix"
resolution=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["G"]["img_resolution"])' "$fixture_json")
num_ws=$(python3 -c "import math; print(2 * int(math.log2($resolution)) - 2)")
generate --seeds 1,2,3 --mix-columns 7,8 --styles "0-$((num_ws - 1))" --outdir "$work/grids/mix-all"  # every w
rc=0; generate --seeds 1,2,3 --mix-columns 7,8 --styles "0-$num_ws" --outdir "$work/grids/none" 2> "$work/styles.log" || rc=$?
[ "$rc" -eq 1 ] && grep -q "the network has $num_ws ws" "$work/styles.log" || fail "a style past the last w was not refused"
generate --seeds 1,2,3 --interpolate 4 --outdir "$work/grids/frames"
[ "$(ls "$work/grids/frames"/frame*.png | wc -l)" -eq 9 ] || fail "interpolation wrote $(ls "$work/grids/frames" | wc -l) frames, not 9"
/usr/bin/python3 "$(dirname "$0")/check_generate_grids.py" "$work/grids" "$resolution" 1,2,3 7,8 4 ||
  fail "style mixing or interpolation shows other images than the seeds'"

# A configuration that does not describe the state dict names the tensor and the shapes.
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["G"]["z_dim"] //= 2; json.dump(c, open(sys.argv[2], "w"))' \
  "$fixture_json" "$work/wrong.json"
if "$bin/stylegan2_import" --state-dict "$fixture" --config "$work/wrong.json" --out "$work/wrong.pt" 2> "$work/wrong.log"; then
  fail "a mismatched configuration was imported"
fi
grep -q "mapping.fc0.weight" "$work/wrong.log" || { cat "$work/wrong.log"; fail "the error does not name the tensor"; }
[ ! -e "$work/wrong.pt" ] || fail "a failed import left a snapshot"

# An import records no training data: metrics and fine-tuning without --data say so.
if "$bin/stylegan2_train" --resume "$work/imported.pt" --kimg 0.016 --outdir "$work/runs-nodata" "$@" > "$work/nodata.log" 2>&1; then
  fail "fine-tuning an import without --data trained on some default dataset"
fi
grep -q "data.path is empty: point it at a dataset with --data" "$work/nodata.log" || { cat "$work/nodata.log"; fail "no --data hint"; }

# A network pickle is not a snapshot: the error says how to convert it.
touch "$work/network.pkl"
if "$bin/stylegan2_train" --resume "$work/network.pkl" --data /usr/share/datasets/fashion-mnist > "$work/pkl.log" 2>&1; then
  fail "--resume of a .pkl trained"
fi
grep -q "scripts/export_pkl.py" "$work/pkl.log" || { cat "$work/pkl.log"; fail "the .pkl error does not say how to convert"; }

# Fine-tuning the import as the reference's transfer learning: a new run directory, fresh
# optimizers, progress from 0; ADA reacting faster (augment.kimg 100) and D's first two layers frozen.
"$bin/stylegan2_train" --resume "$work/imported.pt" --data /usr/share/datasets/fashion-mnist --data.max_images 256 \
    --outdir "$work/runs" --kimg 0.032 --train.kimg_per_tick 0.032 --run.threads 2 --run.grid_w 4 --run.grid_h 2 \
    --aug ada --freezed 2 "$@" > "$work/finetune.log" 2>&1 || { cat "$work/finetune.log"; fail "fine-tuning the import"; }
grep -q "Fine-tuning the imported networks of $work/imported.pt" "$work/finetune.log" || fail "fine-tune log"
grep -q "Fine-tuning, as the reference's --resume: augment.kimg auto: 100" "$work/finetune.log" ||
  { cat "$work/finetune.log"; fail "fine-tuning did not make ADA react faster"; }
grep -A8 "^augment:" "$work"/runs/00000-*/config.yaml | grep -q "kimg: 100" || fail "the run's config.yaml lacks augment.kimg 100"
ls "$work"/runs/00000-*/network-snapshot-000000.pt > /dev/null || fail "fine-tuning wrote no snapshot in a new run"
tuned=$(ls "$work"/runs/00000-*/network-snapshot-*.pt | sort -V | tail -n 1)
"$tests_bin/snapshot_diff" "$work/imported.pt" "$tuned" --prefixes "D.b$resolution.fromrgb.,D.b$resolution.conv0." ||
  fail "--freezed 2: D's first two layers changed"
if "$tests_bin/snapshot_diff" "$work/imported.pt" "$tuned" --prefixes "D.b$resolution.conv1." > /dev/null; then
  fail "--freezed 2: D's third layer did not train"
fi
echo "import_generate: all checks passed"
