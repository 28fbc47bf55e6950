#!/usr/bin/env bash
# Snapshots out to the tools of stylegan2-ada-pytorch and back: a parity fixture is imported,
# exported with stylegan2_export as a TensorFlow-form network pickle, and imported again from it
# (every tensor equal); the pickle is read by a stand-in of the TensorFlow code's Network class and
# written again by Python's own pickler (protocols 2 and 5, arguments the loader ignores, one it
# refuses), which stylegan2_import reads too; bad pickles are refused with the byte or argument
# named. Where SG2_REFERENCE_REPO names a stylegan2-ada-pytorch checkout (with click and requests
# importable), its legacy.load_network_pkl loads the pickle and renders the seeds stylegan2_generate
# renders (check_pkl_reference.py); elsewhere that part is skipped with a note.
# Usage: export_pkl.sh BIN_DIR TESTS_BIN_DIR SOURCE_DIR FIXTURE.pt FIXTURE.json   (exit 77: no fixture)
set -euo pipefail
bin=$1 tests_bin=$2 src=$3 fixture=$4 fixture_json=$5
[ -f "$fixture" ] || { echo "SKIP: no fixture $fixture"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
refused() {  # refused LOG TEXT COMMAND...: COMMAND fails and LOG holds TEXT
  local log=$1 text=$2
  shift 2
  if "$@" > "$log" 2>&1; then fail "accepted: $*"; fi
  grep -q -- "$text" "$log" || { cat "$log"; fail "the error of '$*' does not say '$text'"; }
}
# Modulation biases are stored less 1 in float32: exact near 1 (as the fixtures' are), an ulp of 1 elsewhere.
same_networks() { "$tests_bin/snapshot_diff" "$work/imported.pt" "$1" --tolerance 2.4e-7 > "$work/diff.log" ||
  { cat "$work/diff.log"; fail "$1 differs from the imported snapshot"; }; }

"$bin/stylegan2_import" --state-dict "$fixture" --config "$fixture_json" --out "$work/imported.pt" > /dev/null
"$bin/stylegan2_export" --network "$work/imported.pt" --out "$work/net.pkl" > "$work/export.log"
grep -q "Wrote $work/net.pkl" "$work/export.log" || { cat "$work/export.log"; fail "export log"; }
refused "$work/again.log" "exists; pass --overwrite" "$bin/stylegan2_export" --network "$work/imported.pt" --out "$work/net.pkl"
refused "$work/self.log" "is the snapshot it exports" \
  "$bin/stylegan2_export" --network "$work/imported.pt" --out "$work/imported.pt" --overwrite

"$bin/stylegan2_import" --pkl "$work/net.pkl" --out "$work/back.pt" > /dev/null
same_networks "$work/back.pt"
refused "$work/both.log" "excludes" "$bin/stylegan2_import" --pkl "$work/net.pkl" --state-dict "$fixture" \
  --config "$fixture_json" --out "$work/both.pt"

# Pickles as Python writes them (the original TensorFlow pickles' writer), read back by the import.
wheel=$("$src/scripts/torch_wheel.sh")
PYTHONPATH="$wheel" /usr/bin/python3 "$(dirname "$0")/tf_pickle_stub.py" "$work/net.pkl" "$work/stub"
for variant in p2 p5 ignored; do
  "$bin/stylegan2_import" --pkl "$work/stub-$variant.pkl" --out "$work/stub-$variant.pt" > /dev/null
  same_networks "$work/stub-$variant.pt"
done
refused "$work/unknown.log" "unknown TensorFlow argument 'fused_modconv'" \
  "$bin/stylegan2_import" --pkl "$work/stub-unknown.pkl" --out "$work/unknown.pt"
[ ! -e "$work/unknown.pt" ] || fail "a refused import left a snapshot"
head -c 5000 "$work/net.pkl" > "$work/cut.pkl"
refused "$work/cut.log" "cut.pkl' at byte" "$bin/stylegan2_import" --pkl "$work/cut.pkl" --out "$work/cut.pt"

if [ -n "${SG2_REFERENCE_REPO:-}" ]; then
  "$bin/stylegan2_generate" --network "$work/imported.pt" --seeds 0,1,5 --trunc 0.7 --noise-mode const \
    --outdir "$work/gen" > /dev/null
  PYTHONPATH="$wheel${PYTHONPATH:+:$PYTHONPATH}" /usr/bin/python3 "$(dirname "$0")/check_pkl_reference.py" \
    "$SG2_REFERENCE_REPO" "$work/net.pkl" "$work/imported.pt" "$work/gen" 0,1,5 0.7 const ||
    fail "stylegan2-ada-pytorch's loader does not give the exported networks"
else
  echo "note: SG2_REFERENCE_REPO is not set: the check with stylegan2-ada-pytorch's own loader is skipped"
fi
echo "export_pkl: all checks passed"
