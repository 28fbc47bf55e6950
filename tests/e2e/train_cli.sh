#!/usr/bin/env bash
# End to end through the real command lines, as a user runs them: make TFRecords of the real
# Fashion-MNIST files with stylegan2_dataset, train a tiny model on them, stop, resume with
# --resume latest, render seeds, and check the errors a user gets for bad input. Usage: train_cli.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
source "$(dirname "$0")/command_checks.sh"  # $work, fail, expect_error

# The dataset tool: TFRecords (all levels) from Debian's Fashion-MNIST files, checked, exported, zipped.
"$bin/stylegan2_dataset" create --source /usr/share/datasets/fashion-mnist --dest "$work/fashion-mnist" \
    --max-images 600 > "$work/create.log"
for level in 02 03 04 05; do
  [ -s "$work/fashion-mnist/fashion-mnist-r$level.tfrecords" ] || fail "create wrote no r$level level"
done
[ -s "$work/fashion-mnist/fashion-mnist-rxx.labels" ] || fail "create wrote no labels"
"$bin/stylegan2_dataset" info "$work/fashion-mnist" > "$work/info.log" || { cat "$work/info.log"; fail "info failed"; }
grep -q "600 images, 32x32, 1 channel, labels of 10 values" "$work/info.log" || fail "info: wrong summary"
grep -q "r02     4x4     600 records, all CRCs and Examples valid" "$work/info.log" || fail "info: r02 not verified"
"$bin/stylegan2_dataset" export "$work/fashion-mnist" --outdir "$work/png" --level 8 --max-images 3 > /dev/null
[ -s "$work/png/img00000002.png" ] || fail "export wrote no PNGs"
"$bin/stylegan2_dataset" convert "$work/fashion-mnist" "$work/fashion.zip" > /dev/null
"$bin/stylegan2_dataset" info "$work/fashion.zip" | grep -q "600 images, 32x32, 1 channel, labels of 10 values" ||
  fail "the converted ZIP does not read back"
"$bin/stylegan2_dataset" bench "$work/fashion-mnist" --workers 2 --batches 20 | grep -q "img/s" || fail "bench printed no rate"

# The tool never overwrites a dataset unasked, and never its own source.
cp "$work/fashion.zip" "$work/fashion-copy.zip"
rc=0; "$bin/stylegan2_dataset" convert "$work/fashion-mnist" "$work/fashion.zip" > "$work/overwrite.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "fashion.zip' exists; pass --overwrite" "$work/overwrite.log" || fail "convert overwrote a ZIP"
cmp -s "$work/fashion.zip" "$work/fashion-copy.zip" || fail "a refused convert changed the ZIP"
rc=0; "$bin/stylegan2_dataset" create --source "$work/fashion.zip" --dest "$work/fashion.zip" --overwrite \
    > "$work/overwrite.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "is the source itself" "$work/overwrite.log" || fail "create overwrote its own source"
"$bin/stylegan2_dataset" convert "$work/fashion-mnist" "$work/fashion-copy.zip" --overwrite > /dev/null ||
  fail "--overwrite did not replace the ZIP"
# A deflated ZIP (Python's zipfile.ZIP_DEFLATED) reads as the stored one: converted, the very same
# TFRecord files (their Examples are written deterministically).
python3 - "$work/fashion.zip" "$work/deflated.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as dst:
    for name in src.namelist():
        dst.writestr(name, src.read(name))
    assert all(info.compress_type == zipfile.ZIP_DEFLATED for info in dst.infolist())
PY
"$bin/stylegan2_dataset" convert "$work/fashion.zip" "$work/from-stored" > /dev/null
"$bin/stylegan2_dataset" convert "$work/deflated.zip" "$work/from-deflated" > /dev/null
for level in r02 r03 r04 r05 rxx; do
  suffix=$([ "$level" = rxx ] && echo labels || echo tfrecords)
  cmp -s "$work/from-stored/from-stored-$level.$suffix" "$work/from-deflated/from-deflated-$level.$suffix" ||
    fail "the deflated ZIP's $level.$suffix differs from the stored one's"
done
# Resizing (--resolution, both filters, crops and an upscale) byte for byte as Pillow, which the
# reference's dataset_tool uses (Debian's python3-pil, for /usr/bin/python3).
/usr/bin/python3 "$src/tests/e2e/check_resize_pil.py" "$work" "$bin/stylegan2_dataset" || fail "resizing differs from Pillow"
# A ZIP with one corrupt PNG (cut short) fails info's check, naming the file.
python3 - "$work/fashion.zip" "$work/corrupt.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as dst:
    pngs = sorted(n for n in src.namelist() if n.endswith(".png"))
    for name in src.namelist():
        data = src.read(name)
        dst.writestr(name, data[: len(data) // 2] if name == pngs[3] else data)
PY
rc=0; "$bin/stylegan2_dataset" info "$work/corrupt.zip" > "$work/corrupt.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || { cat "$work/corrupt.log"; fail "info on a ZIP with a corrupt PNG exited $rc"; }
grep -q "ERROR: image 3: .*corrupt.zip/.*img00000003.png" "$work/corrupt.log" || { cat "$work/corrupt.log"; fail "info did not name the PNG"; }
grep -q "1 of 600 images are unreadable" "$work/corrupt.log" || fail "info did not count the bad images"

tiny=(--config "$src/configs/fashion32.yaml" --outdir "$work/runs" --data "$work/fashion-mnist" --data.max_images 512
      --G.channel_base 256 --G.channel_max 32 --D.channel_base 256 --D.channel_max 32
      --G.z_dim 32 --G.w_dim 32 --batch 8 --train.kimg_per_tick 0.016
      --run.grid_w 4 --run.grid_h 2 --run.network_snapshot_ticks 2 --run.threads 2)

"$bin/stylegan2_train" "${tiny[@]}" --kimg 0.032 > "$work/first.log"
run_dir=$(ls -d "$work"/runs/00000-fashion-mnist-fashion32)
for f in config.yaml log.txt run.jsonl reals.png fakes_init.png stats.jsonl network-snapshot-000000.pt; do
  [ -s "$run_dir/$f" ] || fail "missing $f in $run_dir"
done
ls "$run_dir"/events.out.tfevents.* > /dev/null || fail "no TensorBoard event file"
grep -q '"command_line":\[".*stylegan2_train"' "$run_dir/run.jsonl" || fail "run.jsonl lacks the command line"
grep -q '"versions":{.*"libtorch":"1\.\|"versions":{.*"libtorch":"2\.' "$run_dir/run.jsonl" || fail "run.jsonl lacks versions"
grep -q '"world_size":1' "$run_dir/run.jsonl" || fail "run.jsonl lacks the world size" 
grep -q "^tick 0 " "$run_dir/log.txt" || fail "no status line in log.txt"
first_ticks=$(wc -l < "$run_dir/stats.jsonl")

# A write killed mid-way leaves <file>.tmp<pid>: the next start in that directory removes it.
echo partial > "$run_dir/network-snapshot-000000.pt.tmp999999"
# Resume the latest run with a longer schedule: same run directory, more ticks, a later snapshot.
"$bin/stylegan2_train" --resume latest --outdir "$work/runs" --kimg 0.064 > "$work/second.log"
# Ticks of 16 images: the first (8 images) has the reference's name, the last (32) its images.
[ -s "$run_dir/network-snapshot-000000.032.pt" ] || fail "the last tick's snapshot is not network-snapshot-000000.032.pt"
grep -q "Resumed from $run_dir/network-snapshot-000000\.032\.pt" "$work/second.log" || fail "did not resume"
grep -q "resuming at 0.0 kimg" "$work/second.log" || fail "resume did not report its position"
[ "$(wc -l < "$run_dir/run.jsonl")" -eq 2 ] || fail "run.jsonl should have a line per start"
tail -n 1 "$run_dir/run.jsonl" | grep -q '"resumed_from":".*network-snapshot-000000\.032\.pt"' || fail "run.jsonl lacks the resume"
[ "$(wc -l < "$run_dir/stats.jsonl")" -gt "$first_ticks" ] || fail "resumed run wrote no ticks"
[ -z "$(ls -d "$work"/runs/00001-* 2>/dev/null)" ] || fail "resume created a new run directory"
grep -q "batch: 8" "$run_dir/config.yaml" || fail "resumed config lost the batch"
[ ! -e "$run_dir/network-snapshot-000000.pt.tmp999999" ] || fail "the interrupted write's leftover is still there"
grep -q "Removed '.*network-snapshot-000000.pt.tmp999999', left by a write that was interrupted" "$run_dir/log.txt" ||
  fail "log.txt does not say what was removed"

# A snapshot outside any run directory (copied, downloaded) continues in a new run directory under
# --outdir, not beside the file.
mkdir "$work/loose" && cp "$run_dir/network-snapshot-000000.pt" "$work/loose/"
"$bin/stylegan2_train" --resume "$work/loose/network-snapshot-000000.pt" --outdir "$work/runs-loose" --kimg 0.032 \
    > "$work/loose.log"
[ "$(ls -A "$work/loose")" = network-snapshot-000000.pt ] || fail "resuming a loose snapshot wrote beside it"
grep -q "Resumed from $work/loose/network-snapshot-000000.pt" "$work"/runs-loose/00000-*/log.txt ||
  fail "the loose snapshot's run is not under --outdir"
"$bin/stylegan2_generate" --network "$run_dir/network-snapshot-000000.pt" --seeds 0-5 --outdir "$work/gen" > /dev/null
[ -s "$work/gen/seed0005.png" ] && [ -s "$work/gen/grid.png" ] || fail "generate wrote no images"
# Truncation applies to the first --trunc-cutoff ws only: a cutoff of 0 truncates none.
render() {  # render NAME OPTION...: seed 3 into $work/gen-NAME
  "$bin/stylegan2_generate" --network "$run_dir/network-snapshot-000000.pt" --seeds 3 --outdir "$work/gen-$1" \
    "${@:2}" > /dev/null
}
render psi1 --trunc 1
render psi05 --trunc 0.5
render psi05-cutoff0 --trunc 0.5 --trunc-cutoff 0
cmp -s "$work/gen-psi1/seed0003.png" "$work/gen-psi05/seed0003.png" && fail "--trunc 0.5 changed nothing"
cmp -s "$work/gen-psi1/seed0003.png" "$work/gen-psi05-cutoff0/seed0003.png" || fail "--trunc-cutoff 0 still truncated"

# Mixed precision on the CPU: bfloat16 in the two highest resolutions trains; float16 is refused.
# With train.batch_gpu auto, the probe's choice is logged and recorded in the run's config.
"$bin/stylegan2_train" "${tiny[@]}" --outdir "$work/runs-mixed" --run.mixed_precision bfloat16 --G.num_fp16_res 2 \
    --D.num_fp16_res 2 --G.conv_clamp 256 --D.conv_clamp 256 --train.batch_gpu auto --kimg 0.016 > "$work/mixed.log"
grep -q "train.batch_gpu auto: 8 images per process and round, 1 rounds per step (tried 8: fits)" "$work/mixed.log" ||
  { cat "$work/mixed.log"; fail "the batch probe did not report its choice"; }
grep -q "  batch_gpu: 8" "$work"/runs-mixed/00000-*/config.yaml || fail "config.yaml does not record the probed batch_gpu"
grep -q "Precision: G bfloat16 from 16x16 up, float32 below, conv_clamp 256; D bfloat16 from 16x16 up, float32 below, conv_clamp 256" "$work/mixed.log" ||
  { cat "$work/mixed.log"; fail "the mixed-precision run did not report its precision"; }
grep -q "^tick 1 " "$work/mixed.log" || fail "the mixed-precision run did not finish its tick"
grep -q "Precision: G float32, conv_clamp off; D float32, conv_clamp off" "$work/first.log" || fail "the CPU default is not float32"

# SIGINT (Ctrl-C) to one process: it ends the step, writes a snapshot and exits 128 + 2.
"$bin/stylegan2_train" "${tiny[@]}" --kimg 100 --outdir "$work/runs-int" > "$work/int.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "^tick 1 " "$work/int.log" && break; sleep 0.1; done
# While it trains, its run directory is its own: a resume of it is refused before it writes anything.
int_run=$(ls -d "$work"/runs-int/0*)
rc=0; timeout 120 "$bin/stylegan2_train" "${tiny[@]}" --kimg 100 --resume "$int_run" > "$work/locked.log" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "run directory '$int_run' is in use by another run (pid $pid on " "$work/locked.log" ||
  { cat "$work/locked.log"; fail "a second run resumed a run directory in use"; }
grep -q "Resumed from" "$int_run/log.txt" && fail "the refused resume wrote to the run's log.txt"
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { cat "$work/int.log"; fail "SIGINT: exit $rc, not 130"; }
tail -n 2 "$work/int.log" | head -n 1 | grep -q "^Wrote .*/network-snapshot-[0-9]*\(\.[0-9][0-9][0-9]\)\?\.pt$" ||
  { cat "$work/int.log"; fail "SIGINT: no snapshot written at the stop"; }
grep -q "^Stopped by signal 2 at .* kimg; resume with --resume $work/runs-int/" "$work/int.log" ||
  fail "SIGINT: no stop message"

# Bad input: a clear message and exit status 1, never a crash (a signal's 128 + n, an abort's 134).
expect_error "did you mean 'G.z_dim'" "$bin/stylegan2_train" "${tiny[@]}" --G.zdim 3
expect_error "train.batch_gpu = 7 does not divide the per-process batch 30" "$bin/stylegan2_train" "${tiny[@]}" --batch 30 --train.batch_gpu 7
expect_error "data.path '/nonexistent' does not exist" "$bin/stylegan2_train" "${tiny[@]}" --data /nonexistent
# A destination directory must be new or empty.
mkdir -p "$work/not-empty" && touch "$work/not-empty/keep"
expect_error "destination '$work/not-empty' exists and is not an empty directory" \
  "$bin/stylegan2_dataset" create --source /usr/share/datasets/fashion-mnist --dest "$work/not-empty"
[ "$(ls "$work/not-empty")" = keep ] || fail "a refused create wrote into the directory"
runs_before=$(ls "$work/runs" | wc -l)
expect_error "resume: an empty value; give a snapshot file" "$bin/stylegan2_train" "${tiny[@]}" --resume "" --kimg 0.016
[ "$(ls "$work/runs" | wc -l)" -eq "$runs_before" ] || fail "--resume \"\" started a new run"
printf 'G:\n  z_dim: [1, 2\n' > "$work/bad.yaml"
expect_error "bad.yaml:" "$bin/stylegan2_train" --config "$work/bad.yaml"
expect_error "is not a readable snapshot" "$bin/stylegan2_generate" --network "$work/bad.yaml"
expect_error "lists more than 1000000 entries" "$bin/stylegan2_generate" --network "$run_dir/network-snapshot-000000.pt" \
    --seeds 0-99999999999 --outdir "$work/gen-huge"
for psi in nan inf; do
  expect_error "truncation psi must be a finite number" "$bin/stylegan2_generate" \
      --network "$run_dir/network-snapshot-000000.pt" --seeds 0 --trunc "$psi" --outdir "$work/gen-$psi"
done
expect_error "train.batch_gpu: 100000000 images per process and round" "$bin/stylegan2_train" "${tiny[@]}" \
    --batch 100000000 --dry-run
expect_error "both set 'train.batch' on the command line" "$bin/stylegan2_train" "${tiny[@]}" --train.batch 16 --dry-run
expect_error "run.mixed_precision = float16 needs a CUDA device" "$bin/stylegan2_train" "${tiny[@]}" \
    --run.mixed_precision float16 --G.num_fp16_res 2 --kimg 0.016
expect_error "run.grid_w = 100000" "$bin/stylegan2_train" "${tiny[@]}" --run.grid_w 100000 --run.grid_h 100000 --dry-run
snapshot0="$run_dir/network-snapshot-000000.pt"
expect_error "lists more than 1000000 entries" "$bin/stylegan2_generate" --network "$snapshot0" \
    --seeds=-9223372036854775808-0 --outdir "$work/gen-wide"  # a width that overflows int64: refused, not looped
expect_error "styles selects the ws of --mix-columns" "$bin/stylegan2_generate" --network "$snapshot0" --styles 0-1 \
    --outdir "$work/gen-styles"
expect_error "excludes --latents" "$bin/stylegan2_generate" --network "$snapshot0" --seeds 1 --latents "$snapshot0"
expect_error "which generator, 'D'? expected G_ema or G" "$bin/stylegan2_generate" --network "$snapshot0" --which D \
    --outdir "$work/gen-d"
expect_error "repeats: Value 0 not in range" "$bin/stylegan2_bench" "${tiny[@]}" --repeats 0
expect_error "train-detector takes none of: --metric.batch --bogus 1" "$bin/stylegan2_metrics" --metric.batch 8 --bogus 1 \
    train-detector --data "$work/fashion.zip" --out "$work/det.pt"
expect_error "has no splits (only the Fashion-MNIST IDX files do)" "$bin/stylegan2_metrics" train-detector \
    --data "$work/fashion.zip" --heldout-split test --out "$work/det.pt"
"$bin/stylegan2_dataset" create --source "$work/fashion.zip" --dest "$work/unlabelled.zip" --no-labels \
    --max-images 20 > /dev/null
expect_error "train-detector learns to classify the images of --data: '.*unlabelled.zip' has no class labels" \
    "$bin/stylegan2_metrics" train-detector --data "$work/unlabelled.zip" --out "$work/det.pt"
expect_error "key 'train.total_kimg' (command line --kimg): expected a finite number, got '.inf'" \
    "$bin/stylegan2_train" "${tiny[@]}" --kimg .inf
# Command-line mistakes exit 1 in every program, as every other error does (CLI11's own codes are 100+).
for program in stylegan2_train stylegan2_generate stylegan2_dataset stylegan2_metrics stylegan2_import stylegan2_bench \
               stylegan2_launch; do
  rc=0; "$bin/$program" --no-such-option > "$work/cli.log" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] || { cat "$work/cli.log"; fail "$program --no-such-option exited $rc, not 1"; }
done
rc=0; "$bin/stylegan2_generate" --seeds 1 > "$work/cli.log" 2>&1 || rc=$?  # --network missing
[ "$rc" -eq 1 ] || fail "stylegan2_generate without --network exited $rc, not 1"
"$bin/stylegan2_train" --help > /dev/null || fail "--help must exit 0"
"$bin/stylegan2_train" "${tiny[@]}" --dry-run > "$work/dry.log"
grep -q "z_dim: 32" "$work/dry.log" || fail "--dry-run did not print the config"
grep -q "# world: 1 processes" "$work/dry.log" || fail "--dry-run did not print the world"
"$bin/stylegan2_train" "${tiny[@]}" --train.batch_gpu 2 --dry-run > "$work/dry-groups.log"
grep -q "^# warning: D.mbstd_group_size = 4 but a round holds 2 images" "$work/dry-groups.log" ||
  fail "--dry-run did not warn of mbstd groups of 2"
grep -q '# versions: {.*"libtorch"' "$work/dry.log" || fail "--dry-run did not print the versions"
grep -q "^# dataset: fashion-mnist (512 images, 1x32x32, no labels used)" "$work/dry.log" ||
  { cat "$work/dry.log"; fail "--dry-run did not report the dataset"; }
expect_error "data.path '/nonexistent' does not exist" "$bin/stylegan2_train" "${tiny[@]}" --data /nonexistent --dry-run
# No arguments: usage and examples, not a run of the defaults.
mkdir "$work/no-arguments"
(cd "$work/no-arguments" && expect_error "^usage: stylegan2_train --config PRESET.yaml --data DATASET" "$bin/stylegan2_train")
[ -z "$(ls "$work/no-arguments")" ] || fail "stylegan2_train without arguments wrote into its directory"

# Damaged data: info names the file, record and offset and exits non-zero; so does training.
cp -r "$work/fashion-mnist" "$work/damaged"
rm -f "$work/damaged"/*.sg2index
printf '\xff' | dd of="$work/damaged/fashion-mnist-r05.tfrecords" bs=1 seek=5000 conv=notrunc status=none
expect_error "fashion-mnist-r05.tfrecords': record 4 at byte offset 4316: payload CRC mismatch" \
  "$bin/stylegan2_dataset" info "$work/damaged"
expect_error "payload CRC mismatch" "$bin/stylegan2_train" "${tiny[@]}" --data "$work/damaged" --kimg 0.5
# The error that ended the run is also in its log.txt (on a cluster, the run directory says why it died).
damaged_run=$(ls -d "$work"/runs/0* | tail -1)  # the newest run
grep -q "stylegan2_train: error: .*payload CRC mismatch" "$damaged_run/log.txt" || fail "log.txt lacks the fatal error"
# Full resolution cut at a record boundary (reads as valid): the count differs from the other levels'.
cp -r "$work/fashion-mnist" "$work/cut"
rm -f "$work/cut"/*.sg2index
full="$work/cut/fashion-mnist-r05.tfrecords"
truncate -s $(( $(stat -c %s "$full") / 600 * 599 )) "$full"
expect_error "r05.tfrecords' has 599 records but '.*r02.tfrecords' has 600" "$bin/stylegan2_train" "${tiny[@]}" \
    --data "$work/cut" --kimg 0.5
# Metrics of a network on data of another resolution: refused, naming both shapes.
"$bin/stylegan2_dataset" create --source "$work/fashion.zip" --dest "$work/fashion16.zip" --resolution 16 > /dev/null
expect_error "makes 32x32 grayscale images, but the dataset '.*fashion16.zip' holds 16x16 grayscale images" "$bin/stylegan2_metrics" \
    --network "$run_dir/network-snapshot-000000.pt" --data "$work/fashion16.zip" --no-log
rm "$work/damaged/fashion-mnist-r03.tfrecords"
expect_error "level r03 is missing" "$bin/stylegan2_dataset" info "$work/damaged"
expect_error "data.resolution = 64 but the dataset" "$bin/stylegan2_train" "${tiny[@]}" --data.resolution 64
# Numbers out of range: refused at once by name (no hang creating 100000 threads, no abort, no
# silent wrap-around or negative rate).
expect_error "run.threads = 100000: must be 0" timeout 20 "$bin/stylegan2_train" "${tiny[@]}" --run.threads 100000
expect_error "--workers: Value 100000 not in range" "$bin/stylegan2_dataset" create --source "$work/fashion.zip" \
    --dest "$work/never.zip" --workers 100000
expect_error "--resolution: must be 0 (keep the size) or a power of two from 4 to 16384, not -32" \
    "$bin/stylegan2_dataset" create --source "$work/fashion.zip" --dest "$work/never.zip" --resolution -32
expect_error "not abc" "$bin/stylegan2_dataset" create --source "$work/fashion.zip" --dest "$work/never.zip" \
    --resolution abc
expect_error "not 1048576" "$bin/stylegan2_dataset" create --source "$work/fashion.zip" --dest "$work/never.zip" \
    --resolution 1048576
expect_error "--max-images: Value -5 not in range 0 to" "$bin/stylegan2_dataset" create \
    --source "$work/fashion.zip" --dest "$work/never.zip" --max-images -5
[ ! -e "$work/never.zip" ] || fail "a refused create wrote its destination"
expect_error "--batch: Value 0 not in range" "$bin/stylegan2_dataset" bench "$work/fashion-mnist" --batch 0
expect_error "--batches: Value -1 not in range" "$bin/stylegan2_dataset" bench "$work/fashion-mnist" --batches -1
snapshot=$run_dir/network-snapshot-000000.pt
expect_error "--trunc-cutoff: Value -5 not in range" "$bin/stylegan2_generate" --network "$snapshot" --trunc-cutoff -5
expect_error "--styles 8: the network has 8 ws, 0 to 7" "$bin/stylegan2_generate" --network "$snapshot" --seeds 1,2 \
    --mix-columns 3 --styles 0-100 --outdir "$work/never"
python3 - "$work/nan.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 32), }"
header += " " * (118 - len(header)) + "\n"
with open(sys.argv[1], "wb") as f:  # a latent of the tiny network (z_dim 32) whose first value is NaN
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<f", float("nan")) + bytes(4 * 31))
PY
expect_error "nan.npy': latent 0 holds nan" "$bin/stylegan2_generate" --network "$snapshot" --latents "$work/nan.npy" \
    --outdir "$work/never"
[ ! -e "$work/never" ] || fail "a refused generate wrote images"
expect_error "metric 'fid9223372036854776k': 9223372036854776k images is more than" "$bin/stylegan2_metrics" \
    --network "$snapshot" --metrics fid9223372036854776k --no-log
echo "e2e: all checks passed"
