#!/usr/bin/env bash
# End to end, as a user meets them: damaged snapshots and dataset files, writers pointed at their own
# input or at earlier output, a network and data of different shapes, config mistakes and the help
# of every tool. Each case must end with a message that names the file, key or option and exit 1,
# and must leave every file it was refused on as it was. Usage: bad_input.sh BIN_DIR SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
source "$(dirname "$0")/command_checks.sh"  # $work, fail, expect_error
unchanged() {  # unchanged FILE COPY: a refused command left FILE as it was
  cmp -s "$1" "$2" || fail "a refused command changed $1"
}

cd "$work"
"$bin/stylegan2_dataset" create --source /usr/share/datasets/fashion-mnist --dest fm.zip --max-images 256 > /dev/null
"$bin/stylegan2_dataset" create --source fm.zip --dest fm64.zip --resolution 64 --channels 3 > /dev/null
tiny=(--config "$src/configs/fashion32.yaml" --G.channel_base 256 --G.channel_max 32 --D.channel_base 256
      --D.channel_max 32 --G.z_dim 32 --G.w_dim 32 --batch 8 --train.kimg_per_tick 0.016 --run.grid_w 4
      --run.grid_h 2 --run.threads 2 --kimg 0.008)
mkdir from-elsewhere
(cd from-elsewhere && "$bin/stylegan2_train" "${tiny[@]}" --data ../fm.zip --outdir ../runs > /dev/null 2>&1)
"$bin/stylegan2_train" "${tiny[@]}" --data fm64.zip --outdir runs64 > /dev/null 2>&1
snap=$(ls runs/*/network-snapshot-000000.pt)
cp "$(ls runs64/*/network-snapshot-000000.pt)" snap64.pt

# A snapshot records its data as an absolute path: metrics of it work from any directory.
grep -q "^  path: $work/fm.zip$" runs/*/config.yaml || fail "the run's config keeps data.path relative"
cp "$snap" loose.pt

# One byte of a tensor flipped: every program that loads the snapshot refuses it, naming it.
python3 - "$snap" flipped.pt <<'PY'
import struct, sys, zipfile
data = bytearray(open(sys.argv[1], "rb").read())
entry = next(i for i in zipfile.ZipFile(sys.argv[1]).infolist() if "/data/" in i.filename and i.file_size > 256)
name_length, extra_length = struct.unpack("<HH", data[entry.header_offset + 26:entry.header_offset + 30])
data[entry.header_offset + 30 + name_length + extra_length + 100] ^= 0x01  # inside the tensor's bytes
open(sys.argv[2], "wb").write(data)
PY
damaged="flipped.pt' is damaged: its contents' CRC-32C is"
expect_error "$damaged" "$bin/stylegan2_train" --resume flipped.pt --data fm.zip --outdir runs-flipped --kimg 0.016
[ ! -e runs-flipped ] || fail "a resume of a damaged snapshot made a run directory"
expect_error "$damaged" "$bin/stylegan2_generate" --network flipped.pt --seeds 1 --outdir gen-flipped
expect_error "$damaged" "$bin/stylegan2_metrics" --network flipped.pt --data fm.zip --no-log
python3 - "$snap" net.json <<'PY'  # the networks' options a snapshot records, as stylegan2_import reads them
import io, pickle, sys, zipfile
class Skeleton(pickle.Unpickler):  # the dict without torch: tensors become None
    def find_class(self, module, name): return lambda *args, **kwargs: args[0] if args else None
    def persistent_load(self, pid): return None
archive = zipfile.ZipFile(sys.argv[1])
snapshot = Skeleton(io.BytesIO(archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl"))))).load()
open(sys.argv[2], "w").write(snapshot["networks"])
PY
expect_error "$damaged" "$bin/stylegan2_import" --state-dict flipped.pt --config net.json --out never.pt
[ ! -e gen-flipped ] && [ ! -e never.pt ] || fail "a refused load wrote files"

# Writers refuse their own input, and earlier output unless --overwrite.
cp "$snap" snap-copy.pt
expect_error "out 'snap-copy.pt' is an input of the import" "$bin/stylegan2_import" --state-dict snap-copy.pt \
    --config net.json --out snap-copy.pt --overwrite
unchanged snap-copy.pt "$snap"
"$bin/stylegan2_import" --state-dict "$snap" --config net.json --out imported.pt > /dev/null
cp imported.pt imported-copy.pt
expect_error "out 'imported.pt' exists; pass --overwrite" "$bin/stylegan2_import" --state-dict "$snap" \
    --config net.json --out imported.pt
unchanged imported.pt imported-copy.pt
"$bin/stylegan2_import" --state-dict "$snap" --config net.json --out imported.pt --overwrite > /dev/null
"$bin/stylegan2_generate" --network imported.pt --seeds 1 --outdir gen > /dev/null  # an import verifies too
"$bin/stylegan2_dataset" export fm.zip --outdir pngs --max-images 4 > /dev/null
expect_error "outdir 'pngs' is inside the source 'pngs'" "$bin/stylegan2_dataset" export pngs --outdir pngs --overwrite
expect_error "outdir 'pngs/more' is inside the source 'pngs'" "$bin/stylegan2_dataset" export pngs --outdir pngs/more
[ "$(ls pngs | wc -l)" -eq 4 ] || fail "an export into its source added files"
expect_error "outdir 'gen' is not empty; pass --overwrite" "$bin/stylegan2_dataset" export fm.zip --outdir gen
"$bin/stylegan2_dataset" export fm.zip --outdir gen --max-images 2 --overwrite > /dev/null
cp gen/seed0001.png seed-copy.png
expect_error "2 of the 2 files to write exist already (first 'gen/seed0001.png'); pass --overwrite" \
    "$bin/stylegan2_generate" --network "$snap" --seeds 1 --outdir gen
unchanged gen/seed0001.png seed-copy.png
"$bin/stylegan2_generate" --network "$snap" --seeds 1 --outdir gen --overwrite > /dev/null
expect_error "1 of the 2 files to write exists already (first 'gen/grid.png')" \
    "$bin/stylegan2_generate" --network "$snap" --seeds 2 --outdir gen  # other seeds: the grid would be replaced
expect_error "cannot create the output directory (--outdir) 'fm.zip/runs': a file 'fm.zip' is in the way" \
    "$bin/stylegan2_train" "${tiny[@]}" --data fm.zip --outdir fm.zip/runs
expect_error "cannot create --outdir 'fm.zip/gen': a file 'fm.zip' is in the way" \
    "$bin/stylegan2_generate" --network "$snap" --seeds 1 --outdir fm.zip/gen

# A damaged dataset.json: refused by info and create (which once wrote "labels": null), named.
mkdir labelled && cp pngs/*.png labelled/
printf '{"labels": [["img00000000.png", 1], ' > labelled/dataset.json
expect_error "labelled/dataset.json' is not valid JSON: .*; fix or remove it" "$bin/stylegan2_dataset" info labelled
expect_error "fix or remove it, or pass --no-labels" "$bin/stylegan2_dataset" create --source labelled --dest l.zip
"$bin/stylegan2_dataset" create --source labelled --dest unlabelled.zip --no-labels > /dev/null ||
  fail "create --no-labels refused a damaged dataset.json"
printf '{"labels": [["gone.png", 1]]}' > labelled/dataset.json
expect_error "dataset.json' has no label for 'img00000000.png'" "$bin/stylegan2_dataset" info labelled
# Gray and RGB images mixed: the hint is --channels, not --resolution.
mkdir mixed && cp pngs/*.png mixed/ && "$bin/stylegan2_dataset" export fm64.zip --outdir rgb --max-images 1 > /dev/null
cp rgb/img00000000.png mixed/zz-rgb.png
expect_error "zz-rgb.png' is 64x64 with 3 channels but the dataset's first image is 32x32 with 1 channel; .*--resolution R --channels 1 or 3" \
    "$bin/stylegan2_dataset" create --source mixed --dest m.zip
expect_error "zz-rgb.png' is 32x32 with 3 channels .* (stylegan2_dataset create --channels 1 or 3 converts them)" \
    "$bin/stylegan2_dataset" create --source mixed --dest m.zip --resolution 32

# A network and data of different shapes: both named, and the way out.
expect_error "snap64.pt' makes 64x64 RGB images, but the dataset '.*fm.zip' holds 32x32 grayscale images" \
    "$bin/stylegan2_train" --resume snap64.pt --data fm.zip --outdir runs-mismatch --kimg 0.016
expect_error "create --source .*fm.zip --dest NEW --resolution 64 --channels 3" \
    "$bin/stylegan2_metrics" --network snap64.pt --data fm.zip --no-log
# A snapshot's data that is no longer where it was: the message says it is the snapshot's.
mv fm.zip fm-moved.zip
expect_error "data.path '$work/fm.zip', the snapshot's training data, does not exist here (from $work): pass the dataset with --data PATH" \
    "$bin/stylegan2_metrics" --network loose.pt --no-log
mv fm-moved.zip fm.zip

# Config and command-line wording.
printf 'train: 5\n' > section.yaml
expect_error "section.yaml: 'train' is a section (train\..*), not a value: give it as a mapping" \
    "$bin/stylegan2_train" --config section.yaml --data fm.zip --dry-run
expect_error "seeds is given 2 times; give it once" "$bin/stylegan2_generate" --network "$snap" --seeds 1 --seeds 2
"$bin/stylegan2_metrics" train-detector --data fm.zip --epochs 1 --max-images 64 --out det.pt > detector.log 2>&1
grep -q '"heldout_accuracy":null' detector.log || { cat detector.log; fail "no held-out split must read null"; }
cp det.pt det-copy.pt
expect_error "out 'det.pt' exists; pass --overwrite" "$bin/stylegan2_metrics" train-detector --data fm.zip --out det.pt
unchanged det.pt det-copy.pt
expect_error "epochs: Value 0 not in range" "$bin/stylegan2_metrics" train-detector --data fm.zip --epochs 0 --out d2.pt
expect_error "step-factor: Value 1 not in range" "$bin/stylegan2_bench" comm --step-factor 1
expect_error "max-bytes: Value 1000000000000000 not in range" "$bin/stylegan2_bench" comm --max-bytes 1000000000000000
expect_error "min-bytes 5 is not a whole number of 4-byte elements: give a multiple of 4, e.g. 8" \
    "$bin/stylegan2_bench" comm --min-bytes 5

# Config files that YAML reads but that say nothing sound: an alias inside itself, a key twice.
printf 'train: &x\n  ema: *x\n' > alias.yaml
expect_error "alias.yaml: 'train.ema.ema.*nested more than 16 levels deep" "$bin/stylegan2_train" --config alias.yaml \
    --data fm.zip --dry-run
printf 'train:\n  total_kimg: 5\n  total_kimg: 7\n' > twice.yaml
expect_error "twice.yaml: key 'train.total_kimg' is given twice" "$bin/stylegan2_train" --config twice.yaml --data fm.zip \
    --dry-run
# Numbers that would exhaust the machine or train on nothing are refused by name, before any work.
expect_error "G.mapping_layers = 9223372036854775807: must be 1 to 64" "$bin/stylegan2_train" "${tiny[@]}" \
    --data fm.zip --outdir runs-never --G.mapping_layers 9223372036854775807
expect_error "G.z_dim = 9223372036854775807: must be 0 to 65536" "$bin/stylegan2_train" "${tiny[@]}" --data fm.zip \
    --outdir runs-never --G.z_dim 9223372036854775807
expect_error "G.resample_filter \[1, -1\]: its taps sum to 0" "$bin/stylegan2_train" "${tiny[@]}" --data fm.zip \
    --outdir runs-never --G.resample_filter "[1, -1]"
for option in "--train.batch_gpu -1" "--G.num_fp16_res -1" "--D.mbstd_group_size -1" "--run.image_snapshot_ticks -1" \
              "--G.mapping_lr_multiplier -1" "--optim.D_reg_interval 9223372036854775807" "--run.desc a/b"; do
  read -r key value <<< "$option"
  expect_error "${key#--} = '\?$value'\?: must" "$bin/stylegan2_train" "${tiny[@]}" --data fm.zip --dry-run "$key" "$value"
done
# A snapshot already at train.total_kimg: said, exit 0, and no empty run directory left behind.
"$bin/stylegan2_train" --resume loose.pt --data fm.zip --outdir runs-done --kimg 0.008 > done.log 2>&1 ||
  { cat done.log; fail "a resume with nothing to train failed"; }
grep -q "loose.pt is at 0.008 kimg, train.total_kimg is 0.008: nothing to train" done.log || { cat done.log; fail "no word"; }
[ ! -e runs-done ] || fail "a resume with nothing to train made a run directory"
expect_error "has 1 image: the metrics compare distributions" "$bin/stylegan2_metrics" --network "$snap" --data fm.zip \
    --detector det.pt --data.max_images 1 --metrics fid1k --no-log
# Losses that became NaN end the run naming them, instead of training on NaN and exiting 0.
expect_error "Loss/.* is -\?nan in tick .*The snapshots before this tick" "$bin/stylegan2_train" "${tiny[@]}" \
    --data fm.zip --outdir runs-nan --optim.G_lr 1e12 --optim.D_lr 1e12 --kimg 0.064
expect_error "data.split = test: only the Fashion-MNIST IDX files have splits" "$bin/stylegan2_train" "${tiny[@]}" \
    --data fm.zip --data.split test --dry-run
expect_error "level 8: only TFRecord directories have levels" "$bin/stylegan2_dataset" export fm.zip --outdir lv --level 8
expect_error "nproc-per-node 100000: expected 1 to 1024" "$bin/stylegan2_launch" --nproc-per-node 100000 -- /bin/true
expect_error "metric.batch = 0: must be 1 to 65536" "$bin/stylegan2_metrics" --network "$snap" --data fm.zip \
    --detector det.pt --metric.batch 0 --no-log
expect_error "metrics: an empty list" "$bin/stylegan2_metrics" --network "$snap" --data fm.zip --detector det.pt \
    --metrics "" --no-log
"$bin/stylegan2_dataset" create --source fm.zip --dest upper.ZIP --max-images 8 > /dev/null
[ -f upper.ZIP ] || fail "a .ZIP destination did not make a ZIP"
# Writers never write over an input, even with --overwrite.
cp fm.zip fm-copy.zip
expect_error "out 'fm-copy.zip' is the --data it trains on" "$bin/stylegan2_metrics" train-detector --data fm-copy.zip \
    --out fm-copy.zip --overwrite
unchanged fm-copy.zip fm.zip
mkdir netdir && cp "$snap" netdir/seed0000.png
expect_error "would be written over the input 'netdir/seed0000.png'" "$bin/stylegan2_generate" \
    --network netdir/seed0000.png --seeds 0 --outdir netdir --overwrite
cp "$src/configs/fashion32.yaml" mine.yaml
expect_error "jsonl 'mine.yaml' is an input of the bench" "$bin/stylegan2_bench" --config mine.yaml --data fm.zip \
    --jsonl mine.yaml
unchanged mine.yaml "$src/configs/fashion32.yaml"

# Help: a tool's own options first, then examples; metrics lists no training keys.
"$bin/stylegan2_metrics" --help > help.log
grep -q -- "--network" help.log && grep -q -- "--metrics" help.log && grep -q "^Examples:" help.log ||
  fail "stylegan2_metrics --help lacks its options or examples"
! grep -q -- "--G.z_dim\|--train.batch\|--kimg" help.log || fail "stylegan2_metrics --help lists training options"
for program in stylegan2_train stylegan2_generate stylegan2_dataset stylegan2_import stylegan2_bench stylegan2_launch; do
  "$bin/$program" --help > help.log
  grep -q "Examples:" help.log || fail "$program --help has no examples"
done
"$bin/stylegan2_dataset" --help | grep -q "Fashion-MNIST's IDX files" || fail "stylegan2_dataset --help omits its sources"
# Keys not listed are still accepted: what fails here is the missing detector, not the key.
expect_error "metric fid1k has no detector" "$bin/stylegan2_metrics" --network "$snap" --G.z_dim 32 --data fm.zip \
    --metrics fid1k --no-log
echo "bad_input: all checks passed"
