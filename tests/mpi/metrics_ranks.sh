#!/usr/bin/env bash
# Distributed metrics end to end, through the real command lines:
#  1. stylegan2_metrics train-detector writes a TorchScript detector (Fashion-MNIST subset);
#  2. stylegan2_train evaluates fid, kid, precision/recall, the Inception Score (the built-in
#     detector's classes) and perceptual path length (a stand-in of vgg16.pt) during training (metric-<name>.jsonl)
#     and writes TensorBoard events that an independent reader (tests/e2e/check_events.py) parses;
#  3. stylegan2_metrics on the final snapshot under mpirun with 1, 2 and 3 ranks prints the training
#     loop's numbers (every value of every metric; relative difference <= 1e-6), the later runs
#     reading the real statistics cache;
#  4. scripts/plot_stats plots the run;
#  5. a corrupt detector file fails every world size with a message naming the file, never a hang;
#  6. a SIGTERM to one rank during an in-training metric stops the job promptly (exit 143).
# Usage: metrics_ranks.sh BIN_DIR SOURCE_DIR TESTS_BIN_DIR
set -euo pipefail
bin=$1 src=$2 tests_bin=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fmnist=/usr/share/datasets/fashion-mnist

"$bin/stylegan2_metrics" train-detector --data "$fmnist" --out "$work/detector.pt" --epochs 1 --max-images 3000 \
    > "$work/detector.log" 2>&1 || { cat "$work/detector.log"; fail "train-detector"; }
# A misspelled option of the subcommand is a command-line error, not a default silently kept.
if "$bin/stylegan2_metrics" train-detector --data "$fmnist" --out "$work/typo.pt" --epoch 5 \
    > "$work/typo.log" 2>&1; then
  fail "train-detector accepted --epoch"
fi
grep -q -- "--epoch" "$work/typo.log" || { cat "$work/typo.log"; fail "the error does not name --epoch"; }

"$tests_bin/standin_detectors" vgg16 "$work/vgg16.pt"
# pr3203: 320 fakes, neighbourhood 3; ppl_wend_30: 30 path-length samples (pairs straddle blocks of 50 at 3 ranks)
metrics=(fid320_full kid320_full pr3203_full is320 ppl_wend_30 ppl2_zfull_30)
metric_options=(--metrics "$(IFS=,; echo "${metrics[*]}")" --detector "$work/detector.pt" --metric.batch 50
                --metric.pr_detector "$work/vgg16.pt" --metric.cache_dir "$work/cache" --data.max_images 2000)
"$bin/stylegan2_train" --config "$src/configs/fashion32.yaml" "${metric_options[@]}" --outdir "$work/runs" \
    --kimg 0.064 --train.kimg_per_tick 0.032 --run.image_snapshot_ticks 1 --run.threads 1 --data.workers 0 \
    --run.grid_w 4 --run.grid_h 2 > "$work/train.log" 2>&1 || { cat "$work/train.log"; fail "training with metrics"; }
run_dir=$(ls -d "$work"/runs/*/)
snapshot=$(ls "$run_dir"/network-snapshot-*.pt | sort -V | tail -n 1)
for metric in "${metrics[@]}"; do
  [ "$(wc -l < "$run_dir/metric-$metric.jsonl")" -ge 2 ] || fail "metric-$metric.jsonl has fewer than 2 lines"
done
# The TensorBoard events, read by an independent reader (Python + protobuf), match stats.jsonl and the metrics.
/usr/bin/python3 "$src/tests/e2e/check_events.py" "$run_dir" "$src/src/train/event.proto" || fail "event file"
# scripts/plot_stats draws the run (gnuplot): losses and each metric as PNGs.
"$src/scripts/plot_stats" "$run_dir" --out "$work/plots" > "$work/plots.log" || { cat "$work/plots.log"; fail "plot_stats"; }
for png in losses.png timing.png fid320_full.png kid320_full.png pr3203_full.png; do
  head -c 8 "$work/plots/$png" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || fail "plot_stats wrote no $png"
done
# Every value of METRIC in the JSON lines of stylegan2_metrics (RESULTS) against the values the
# training loop wrote for the final snapshot; prints them.
same_as_training() {  # same_as_training RESULTS METRIC
  python3 - "$1" "$run_dir/metric-$2.jsonl" "$2" << 'EOF_PY'
import json, sys
printed = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
got = [line["results"] for line in printed if line["metric"] == sys.argv[3]][0]
expected = [json.loads(l) for l in open(sys.argv[2])][-1]["results"]
assert sorted(got) == sorted(expected), f"{sys.argv[3]}: values {sorted(got)}, training loop {sorted(expected)}"
for name, value in sorted(got.items()):
    assert abs(value - expected[name]) <= 1e-6 * abs(expected[name]), f"{name} {value}, training loop {expected[name]}"
    print(f"  {name} {value} (training loop {expected[name]})")
EOF_PY
}

for np in 1 2 3; do
  start=$(date +%s.%N)
  mpirun --oversubscribe -np "$np" "$bin/stylegan2_metrics" --network "$snapshot" "${metric_options[@]}" --no-log \
      --run.threads 1 > "$work/np$np.json" 2> "$work/np$np.log" || { cat "$work/np$np.log"; fail "np $np"; }
  echo "np $np: $(awk -v start="$start" -v end="$(date +%s.%N)" 'BEGIN { printf "%.1f", end - start }') s"
  for metric in "${metrics[@]}"; do
    same_as_training "$work/np$np.json" "$metric" || fail "np $np: $metric differs from the training loop's"
  done
done
grep -q "Real-image statistics from $work/cache" "$work/np2.json" "$work/np2.log" || fail "np 2 did not read the statistics cache"

head -c 4096 /dev/urandom > "$work/corrupt.pt"
for np in 1 2; do
  rc=0
  timeout 120 mpirun --oversubscribe -np "$np" "$bin/stylegan2_metrics" --network "$snapshot" \
    "${metric_options[@]}" --detector "$work/corrupt.pt" > "$work/corrupt$np.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "a corrupt detector passed with $np ranks"
  [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "a corrupt detector hung $np ranks"
  grep -q "corrupt.pt' is not a loadable TorchScript" "$work/corrupt$np.log" || { cat "$work/corrupt$np.log"; fail "message"; }
done
# 6. SIGTERM to rank 1 while the training evaluates a long metric (50,000 fakes) at a tick that
#    writes no snapshot (metric.ticks 1, snapshots only at the end): both ranks stop within a round
#    of blocks, the stop writes its snapshot, the log names the metric cut short and that snapshot,
#    no metric line is written, and the job exits 128 + 15.
stopped_run="$work/stopped/00000-fashion-mnist-fashion32"
mpirun --oversubscribe -np 2 "$bin/stylegan2_train" --config "$src/configs/fashion32.yaml" --metrics fid50k \
    --detector "$work/detector.pt" --metric.batch 50 --metric.cache_dir "$work/cache" --data.max_images 2000 \
    --metric.ticks 1 --run.network_snapshot_ticks 0 --outdir "$work/stopped" --kimg 1 --run.threads 1 \
    --data.workers 0 > "$work/stopped.log" 2>&1 &
job_pid=$!
for _ in $(seq 1200); do grep -q "^tick 0 " "$work/stopped.log" && break; sleep 0.1; done  # the metrics come next
grep -q "^tick 0 " "$work/stopped.log" || { kill -TERM "$job_pid"; cat "$work/stopped.log"; fail "no tick 0"; }
rank1=""
for pid in $(pgrep -P "$job_pid" -f stylegan2_train); do
  tr '\0' '\n' < "/proc/$pid/environ" | grep -qx OMPI_COMM_WORLD_RANK=1 && rank1=$pid
done
[ -n "$rank1" ] || { kill -TERM "$job_pid"; fail "no rank 1 among the children of mpirun"; }
kill -TERM "$rank1"
start=$(date +%s)
rc=0; timeout 60 tail --pid="$job_pid" -f /dev/null || kill -TERM "$job_pid" 2> /dev/null || true  # mpirun ends its ranks
wait "$job_pid" || rc=$?
echo "SIGTERM during fid50k: exit $rc after $(( $(date +%s) - start )) s"
[ "$rc" -eq 143 ] || { cat "$work/stopped.log"; fail "exit $rc after a SIGTERM during a metric, expected 143"; }
grep -q "The metrics fid50k were cut short (.*stopped by signal 15 at [0-9]* of [0-9]*); evaluate them with \
stylegan2_metrics --network $stopped_run/network-snapshot-000000.pt --metrics fid50k" "$work/stopped.log" ||
  { cat "$work/stopped.log"; fail "no message naming the metric cut short and the stop's snapshot"; }
[ -s "$stopped_run/network-snapshot-000000.pt" ] || fail "the stop during the metrics wrote no snapshot"
[ ! -e "$stopped_run/metric-fid50k.jsonl" ] || fail "a stopped metric wrote a line"
echo "metrics_ranks: all checks passed"
