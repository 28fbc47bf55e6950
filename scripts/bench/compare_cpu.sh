#!/usr/bin/env bash
# Side by side on one machine, one after the other: the reference Python implementation
# (stylegan2-ada-pytorch checkout given as the first argument, run with Debian's python3-torch) and
# stylegan2_bench, on the same preset (default bench-cpu-32) with the same thread count. Prints both
# and the throughput ratio, read from their --jsonl records.
#   scripts/bench/compare_cpu.sh /path/to/stylegan2-ada-pytorch [configs/bench-cpu-32.yaml]
set -euo pipefail
cd "$(dirname "$0")/../.."
ref=${1:?usage: compare_cpu.sh STYLEGAN2_ADA_PYTORCH_DIR [CONFIG]}
config=${2:-configs/bench-cpu-32.yaml}
threads=${THREADS:-2}
python=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== reference ($python, $(nproc) cores, $threads threads)"
"$python" scripts/bench/reference_bench.py --ref "$ref" --config "$config" --threads "$threads" --jsonl "$out/ref.jsonl"
echo "== stylegan2_bench"
"${BUILD_DIR:-build}/bin/stylegan2_bench" --config "$config" --run.threads "$threads" --jsonl "$out/ours.jsonl"
source scripts/bench/comparison_summary.sh  # field, ratio
ref_rate=$(field "$out/ref.jsonl" img_per_s 1 2)
our_rate=$(field "$out/ours.jsonl" img_per_s 1 2)
echo "== img/s: reference $ref_rate, stylegan2-cpp $our_rate, ratio $(ratio "$our_rate" "$ref_rate")"
