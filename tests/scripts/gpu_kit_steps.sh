#!/usr/bin/env bash
# The GPU kit's step machinery (scripts/gpu/kit_steps.sh), which a GPU session cannot afford to
# debug: a step over its time limit is stopped with what it started, the steps left once the budget
# is spent are skipped, a step that sets the environment of later ones runs in the kit's shell, the
# summary counts the failures, SG2_KIT_STEPS selects a call's steps, says and lacks check a step's
# output for a pattern (the kit nests them; a stopped step's output reaches the log), and
# fid_matches_cpu passes equal values and fails others; the bench scripts' run budget, and the
# comparison's summary arithmetic.
#   tests/scripts/gpu_kit_steps.sh SOURCE_DIR
set -uo pipefail
cd "$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() {  # expect DESCRIPTION PATTERN FILE
  if grep -q -- "$2" "$3"; then echo "ok: $1"; else echo "FAILED: $1 (no '$2' in $3)"; failures=$((failures + 1)); fi
}

# A fake stylegan2_metrics: prints the FID that FID_<DEVICE> names, as the real one's JSON line.
cat > "$work/fake_metrics" << 'EOF'
#!/usr/bin/env bash
while [ $# -gt 0 ]; do [ "$1" = --run.device ] && device=$2; shift; done
value_name="FID_$device"
echo "{\"metric\":\"fid2k_full\",\"num_fakes\":2000,\"value\":${!value_name},\"world_size\":1}"
EOF
chmod +x "$work/fake_metrics"

(
  mode=cpu
  source scripts/gpu/kit_steps.sh
  export SG2_KIT_STEP_LIMIT_S=2 SG2_KIT_BUDGET_S=20
  kit_init "$work/out" > /dev/null
  step quick true
  step over_its_limit bash -c "sleep 30 & echo \$! > $work/child; sleep 30"
  step fails false
  step said_then_stopped says "never" bash -c 'echo printed before the limit; sleep 30'
  step_in_shell sets_env export SG2_KIT_TEST_VALUE=1
  step sees_env bash -c '[ "$SG2_KIT_TEST_VALUE" = 1 ]'
  step said says "hello" echo hello world
  step not_said says "absent" echo hello world
  step lacked lacks "absent\|missing" echo hello world
  step not_lacked lacks "absent\|world" echo hello world
  step said_and_lacked says "hello" lacks "absent" echo hello world
  step said_not_lacked says "hello" lacks "world" echo hello world
  step lacked_but_failed lacks "absent" false
  step refused lacks "SKIPPED" unless_refused "not supported" bash -c 'echo "Device not supported"; exit 255'
  step failed_not_refused unless_refused "not supported" bash -c 'echo "out of bounds"; exit 9'
  step passed_not_refused unless_refused "not supported" echo "Device not supported, but ran"
  FID_cuda=101.5 FID_cpu=100 step fid_close fid_matches_cpu "$work/fake_metrics" snapshot detector cuda "$work"
  FID_cuda=110 FID_cpu=100 step fid_far fid_matches_cpu "$work/fake_metrics" snapshot detector cuda "$work"
  FID_cuda=nan FID_cpu=100 step fid_nan fid_matches_cpu "$work/fake_metrics" snapshot detector cuda "$work"
  SG2_KIT_STEPS="chosen also_chosen" step chosen true
  SG2_KIT_STEPS="chosen also_chosen" step not_chosen false
  SG2_KIT_STEPS="chosen also_chosen" step_always always false
  SG2_KIT_STEPS="chosen
     also_chosen" step also_chosen true
  SG2_KIT_STEPS="chosen_too" step chosen false
  step spends_the_budget sleep 1.5
  while [ $(($(date +%s) - kit_start)) -lt 12 ]; do sleep 1; done
  step after_the_budget true
  kit_finish > /dev/null
)
status=$?
summary=$work/out/summary.md
cat "$summary"
[ "$status" -eq 11 ] && echo "ok: the exit code counts the 11 failed steps (not the skipped ones)" ||
  { echo "FAILED: exit $status, expected 11 failed steps"; failures=$((failures + 1)); }
expect "a step within its limit" "| quick | ok |" "$summary"
expect "a step over its limit is stopped" "| over_its_limit | FAILED (stopped at its time limit) |" "$summary"
kill -0 "$(cat "$work/child")" 2> /dev/null &&
  { echo "FAILED: the stopped step's child still runs"; failures=$((failures + 1)); } || echo "ok: and its child with it"
expect "a failing step" "| fails | FAILED (exit 1) |" "$summary"
expect "a checked step over its limit is stopped" "| said_then_stopped | FAILED (stopped at its time limit) |" "$summary"
expect "and what it printed is in the log" "^printed before the limit" "$work/out/steps.log"
expect "a step in the kit's shell sets the environment of later ones" "| sees_env | ok |" "$summary"
expect "says passes when the output has the pattern" "| said | ok |" "$summary"
expect "says fails when it has not" "| not_said | FAILED (exit 1) |" "$summary"
expect "lacks passes when the output has none of the patterns" "| lacked | ok |" "$summary"
expect "lacks fails when it has one" "| not_lacked | FAILED (exit 1) |" "$summary"
expect "says of lacks passes when both hold" "| said_and_lacked | ok |" "$summary"
expect "says of lacks fails when lacks does" "| said_not_lacked | FAILED (exit 1) |" "$summary"
expect "lacks fails when its command fails" "| lacked_but_failed | FAILED (exit 1) |" "$summary"
expect "a tool that refuses the machine skips its step" "| refused | skipped | [0-9.]* | the tool cannot run" "$summary"
expect "a tool that fails otherwise fails it" "| failed_not_refused | FAILED (exit 9) |" "$summary"
expect "and one that runs passes, whatever it printed" "| passed_not_refused | ok |" "$summary"
expect "FIDs within 3 % pass" "| fid_close | ok |" "$summary"
expect "FIDs 10 % apart fail" "| fid_far | FAILED (exit 1) |" "$summary"
expect "a NaN FID fails" "| fid_nan | FAILED (exit 1) |" "$summary"
expect "a step that SG2_KIT_STEPS names runs" "| chosen | ok |" "$summary"
expect "so does one after a line break" "| also_chosen | ok |" "$summary"
expect "one it does not name is skipped" "| not_chosen | skipped | | not in this call's steps (SG2_KIT_STEPS)" "$summary"
expect "a name is matched whole, not as a part of another" "| chosen | skipped | | not in this call's steps" "$summary"
expect "step_always runs whatever SG2_KIT_STEPS names" "| always | FAILED (exit 1) |" "$summary"
expect "steps after the budget are skipped" "| after_the_budget | skipped | | the kit's 20 s are spent" "$summary"

# The bench scripts' shared clock (scripts/bench/run_budget.sh).
is() {  # is DESCRIPTION EXPECTED ACTUAL
  [ "$2" = "$3" ] && echo "ok: $1" || { echo "FAILED: $1 (got '$3', expected '$2')"; failures=$((failures + 1)); }
}
# The machine's PyTorch, found without importing it: a fake torch package (and nvidia-* wheels) on
# PYTHONPATH, whose import would fail.
fake=$work/site
mkdir -p "$fake/torch/lib" "$fake/nvidia/nccl/lib" "$work/kit/prebuilt"
echo 'raise ImportError("imported")' > "$fake/torch/__init__.py"
echo "__version__ = '9.9.9+cu1'" > "$fake/torch/version.py"
(
  source scripts/gpu/kit_steps.sh
  export PYTHONPATH=$fake
  is "torch's folder" "$fake/torch" "$(torch_package_dir)"
  is "its version" "9.9.9+cu1" "$(torch_version_in "$(torch_package_dir)")"
  echo "9.9.9+cu1" > "$work/kit/prebuilt/torch-version"
  prebuilt_matches "$work/kit" && echo "ok: prebuilt binaries of this torch match" ||
    { echo "FAILED: prebuilt binaries of this torch do not match"; exit 1; }
  echo "9.9.9" > "$work/kit/prebuilt/torch-version"
  prebuilt_matches "$work/kit" && { echo "FAILED: prebuilt binaries of another torch match"; exit 1; } ||
    echo "ok: those of another do not"
  is "the library path: torch's, the nvidia wheels', the toolkit's" \
    "$fake/torch/lib:$fake/nvidia/nccl/lib$([ -d /usr/local/cuda/lib64 ] && echo :/usr/local/cuda/lib64)" \
    "$(pytorch_library_path)"
  [ "$failures" -eq 0 ]
) || failures=$((failures + 1))

# The two calls of scripts/gpu/session.sh run every step of run.sh between them, and name no other.
run_sh_steps=$(sed -nE 's/^ *(step|skip) ([a-z0-9_]+) .*/\2/p' scripts/gpu/run.sh | sort -u)
session_steps=$(mode=cpu; source scripts/gpu/kit_steps.sh; printf '%s\n' $kit_first_call_steps $kit_second_call_steps | sort -u)
is "the session's calls name run.sh's steps (those a call selects)" "$run_sh_steps" "$session_steps"
# The comparison's run.cuda_graphs variants go where the call's gpu_graphs step failed or ran out of
# time, or where SG2_SESSION_GRAPHS=off says the first call's did; the others stay, in their order.
variants_after() {  # variants_after SUMMARY_ROW [SG2_SESSION_GRAPHS]
  mkdir -p "$work/graphs-out"
  echo "$1" > "$work/graphs-out/summary.md"
  (mode=cpu; source scripts/gpu/kit_steps.sh; OUT=$work/graphs-out SG2_SESSION_GRAPHS=${2:-on} \
     comparison_variants "auto:nhwc auto:nhwc:graphs ref:off ref:off:graphs reference:full" 2> /dev/null)
}
is "the graphs variants stay after a passing gpu_graphs step" \
  "auto:nhwc auto:nhwc:graphs ref:off ref:off:graphs reference:full" "$(variants_after "| gpu_graphs | ok | 9.1 | x |")"
is "and go after a failed one" "auto:nhwc ref:off reference:full" \
  "$(variants_after "| gpu_graphs | FAILED (exit 1) | 9.1 | x |")"
is "or one stopped at its time limit" "auto:nhwc ref:off reference:full" \
  "$(variants_after "| gpu_graphs | FAILED (stopped at its time limit) | 60.0 | x |")"
is "or after a failed training with graphs" "auto:nhwc ref:off reference:full" \
  "$(variants_after "| train_cuda_graphs | FAILED (exit 1) | 9.1 | x |")"
is "but not after another step's failure" "auto:nhwc auto:nhwc:graphs ref:off ref:off:graphs reference:full" \
  "$(variants_after "| train | FAILED (exit 1) | 9.1 | x |")"
is "nor after a host wait with graphs (they still train)" \
  "auto:nhwc auto:nhwc:graphs ref:off ref:off:graphs reference:full" \
  "$(variants_after "| train_cuda_graphs_host_sync | FAILED (exit 1) | 9.1 | x |")"
is "or where SG2_SESSION_GRAPHS=off" "auto:nhwc ref:off reference:full" "$(variants_after "" off)"
scripts/gpu/session.sh fourth > "$work/session-usage" 2>&1
is "session.sh takes first, second or third only" 2 "$?"
expect "and says so" "usage: scripts/gpu/session.sh first|second|third" "$work/session-usage"
[ "$(wc -l <<< "$run_sh_steps")" -ge 15 ] && echo "ok: and run.sh's steps were found ($(wc -l <<< "$run_sh_steps"))" ||
  { echo "FAILED: only $(wc -l <<< "$run_sh_steps") steps found in run.sh"; failures=$((failures + 1)); }

source scripts/bench/run_budget.sh
now=$(date +%s)
is "a run gets its limit while the budget lasts" 240 "$(run_seconds_left "$now" 560 240)"
left=$(run_seconds_left "$((now - 460))" 560 240)  # 100, or a little less once the clock ticks
is "then what is left of the budget" yes "$([ "$left" -ge 98 ] && [ "$left" -le 100 ] && echo yes || echo "$left")"
is "and none when under 30 s are left" 0 "$(run_seconds_left "$((now - 540))" 560 240)"
is "timeout's code is out of time" "exit 124, out of time" "$(run_outcome 124)"
is "so is its kill's" "exit 137, out of time" "$(run_outcome 137)"
is "another code is itself" "exit 3" "$(run_outcome 3)"
runs=$work/runs
mkdir -p "$runs"
run_clock_start bench "$runs/log" 3 2 2  # 3 s, 2 s a run: the slow run leaves too little for another
budgeted_run "$runs/said" sh -c 'echo "throughput 9 img/s"; echo "a warning" >&2' 2> /dev/null
is "a run's output goes to its file" "throughput 9 img/s" "$(cat "$runs/said")"
expect "and to the log" "^throughput 9 img/s" "$runs/log"
expect "its errors to the log only" "^a warning" "$runs/log"
budgeted_run "$runs/slow" sh -c 'echo "started"; sleep 10' 2> /dev/null
expect "a run over its limit keeps what it printed" "^started" "$runs/slow"
expect "and is named out of time" "bench: FAILED (exit 124, out of time): sh -c" "$runs/log"
budgeted_run "$runs/late" echo "never" 2> /dev/null
expect "a run after the budget is skipped" "bench: SKIPPED (the 3 s budget is spent): echo never" "$runs/log"
is "the failed and the skipped run are counted" 2 "$run_failures"

# The comparison's summary (scripts/bench/comparison_summary.sh) on stylegan2_bench's records.
source scripts/bench/comparison_summary.sh
cat > "$work/bench.jsonl" << 'EOF'
{"kind": "train", "img_per_s": 200.0, "s_per_kimg": 5.0}
{"kind": "train", "img_per_s": 241.3912, "s_per_kimg": 4.1426, "batch_gpu": 32, "host_s_per_step": 0.10423, "peak_device_gib": 10.8312, "device_kernels": {"matrix_s": 0.0763, "other_s": 0.05118}, "plugins_fell_back": false}
EOF
is "img/s of the last record, to two decimals" 241.39 "$(field "$work/bench.jsonl" img_per_s 1 2)"
is "s/kimg" 4.14 "$(field "$work/bench.jsonl" s_per_kimg 1 2)"
is "peak device memory" 10.83 "$(field "$work/bench.jsonl" peak_device_gib 1 2)"
is "an integer as it is" 32 "$(field "$work/bench.jsonl" batch_gpu)"
is "a flag" false "$(field "$work/bench.jsonl" plugins_fell_back)"
is "the host's ms a step" 104.2 "$(host_ms_per_step "$work/bench.jsonl")"
is "the other kernels' ms" 51.2 "$(other_kernel_ms "$work/bench.jsonl")"
is "nothing for a value the record lacks" "" "$(field "$work/bench.jsonl" device_kernels.none)"
is "nothing for a run that left no record" "" "$(field "$work/none.jsonl" img_per_s 1 2)"
is "a ratio" 9.67 "$(ratio 241.39 24.96)"
is "no ratio without a rate" - "$(ratio "" 24.96)"
is "a goal met" met "$(meets 4.14 "<=" 5)"
is "a goal not met" "not met" "$(meets 5.01 "<=" 5)"
is "no goal without a value" - "$(meets - ">=" 2)"
is "an H200's bandwidth against an H100's" 1.433 "$(h100_bandwidth_ratio "NVIDIA H200")"
is "no ratio for another GPU" "" "$(h100_bandwidth_ratio "NVIDIA H100 80GB HBM3")"
is "the estimate: 0.433 x 51.2 ms more a step of 32 images" 4.83 "$(slowed_kimg 4.14 1.433 51.2 32)"

# The quality curves' bookkeeping (scripts/bench/quality_curves.sh): the kimg of a snapshot's name, the
# snapshots evaluated (every EVERY kimg, ours and the reference's), and the table against the seeds.
source scripts/bench/quality_curves.sh
is "a snapshot's kimg" 8 "$(snapshot_kimg runs/network-snapshot-000008.pt)"
is "a pickle's" 16 "$(snapshot_kimg runs/00000-x/network-snapshot-000016.pkl)"
is "a kimg in images" 0.512 "$(snapshot_kimg network-snapshot-000000.512.pt)"
curves=$work/curves
mkdir -p "$curves/ours/00000-fm64" "$curves/reference-0/00000-fm64-auto1"
touch "$curves"/ours/00000-fm64/network-snapshot-0000{00,04,08,12,16}.pt \
      "$curves"/reference-0/00000-fm64-auto1/network-snapshot-0000{00,08,16}.pkl
is "the snapshots every 8 kimg, each with its run" \
  "ours 0 ours 8 ours 16 reference-0 0 reference-0 8 reference-0 16" \
  "$(list_snapshots "$curves" 8 | cut -d' ' -f1,2 | tr '\n' ' ' | sed 's/ $//')"
is "every snapshot with 0" 8 "$(list_snapshots "$curves" 0 | wc -l)"
is "ours up to the furthest the reference reached" "ours 0 ours 4 ours 8 reference-0 0 reference-0 8" \
  "$(rm "$curves"/reference-0/*/*016.pkl; comparable_snapshots "$curves" 4 | cut -d' ' -f1,2 | tr '\n' ' ' |
     sed 's/ $//')"
printf '%s\n' "ours 8 40.0" "reference-0 8 45.0" "reference-1 8 35.0" "ours 16 20.0" "reference-0 16 24.0" \
  "reference-1 16 22.0" "ours 24 33.0" "reference-0 24 20.0" "reference-1 24 30.0" "ours 0 300" > "$curves/fid.tsv"
python=python3 quality_table "$curves/fid.tsv" fid10k_full 16 "0 1" > "$curves/table.md"
expect "a kimg within the seeds' spread" "^| 8 | 40.00 | 45.00 | 35.00 | within the spread |" "$curves/table.md"
expect "one below both, where ours resumed" "^| 16 (resumed here) | 20.00 | 24.00 | 22.00 | below the best seed |" \
  "$curves/table.md"
expect "one above the worse seed" "^| 24 | 33.00 | 20.00 | 30.00 | 1.10x the worse seed |" "$curves/table.md"
expect "0 kimg is no comparison" "^| 0 | 300.00 | - | - | - |" "$curves/table.md"
expect "and the count" "at or below the worse reference seed at 2 of 3 kimg points" "$curves/table.md"
[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
