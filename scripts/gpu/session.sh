#!/usr/bin/env bash
# A GPU session's device calls. A session has 15 minutes of device time in all: the machine's start
# (a minute or two) counts, and so does another start for a call that finds the machine given back
# (it is, 30 s after a call). So the session makes one or two calls of this script, each of which
# runs what matters most first, within SG2_SESSION_BUDGET_S (default 420 s: a device call's
# timeout_s of 480 leaves it a minute), and writes to $OUT as it goes (default gpu-results/):
#   first   the kit's correctness steps (the GPU's own tests, the collectives on NCCL, parity on
#           the GPU, training, resume on the GPU and across devices, the NCCL reducer, mixed
#           precision with train.batch_gpu auto, the comm bench, no host synchronisation in a
#           step, the op bench, memcheck), then config-f 256 against stylegan2-ada-pytorch (the
#           reference, ours probed and channels_last, profiled, the same with the float32
#           blocks' convolutions in 3xTF32 (run.float32_convolutions), the same with every phase
#           replayed from a CUDA graph (run.cuda_graphs), ours at the reference's per-round batch
#           without graphs and with, and the reference in one round of the whole
#           batch; then, where time is left, ours with the float32 blocks channels_last too, whose
#           cuDNN FFMA convolutions took about 18 ms of a step NCHW; run.conv2d_gradfix false only by
#           hand now: 1.35x, second H200 run)
#   second  paper256 against the reference (six variants of ours, two with CUDA graphs), then the kit's other steps
#           (a training for FID, the CPU suite on that build, FID on the GPU against the CPU,
#           channels_last, the library copies)
#   third   quality at speed against the reference's own training loop (gpu_quality.sh) beside the
#           GPU's tests and memcheck, the loader and config-f's step on real data, config-f and
#           paper256 at equal settings (32 images a round, both layouts), the scaling model's compute
#           term (scripts/gpu/third_call.sh); SG2_SESSION_BUDGET_S defaults to 560 s there (timeout_s 600)
# The kit gets at most SG2_SESSION_KIT_S of the budget (default: 250 s in the first call, what the
# comparison leaves in the second), the comparison the rest. The reference's CUDA plugins build in
# the background from the call's start, while the kit's steps run, so the comparison finds them built.
# $OUT then holds summary.md and steps.log (the kit), gpu_vs_reference.md and .log (the comparison)
# and session.log (the binaries' set-up, the plugins' build). The exit code is the kit's failed
# steps, plus 1 for a failed comparison.
#   OUT=$OUT scripts/gpu/session.sh first|second|third      # on the GPU machine, carrying .gpu-kit
#   scripts/gpu/session.sh first|second|third --cpu-dry-run # the same on a CPU machine, tiny and short
set -uo pipefail
cd "$(dirname "$0")/../.."
call=${1:-}
dry_run=()
[ "${2:-}" = --cpu-dry-run ] && dry_run=(--cpu-dry-run)
case "$call" in
  first | second | third) ;;
  *) echo "usage: scripts/gpu/session.sh first|second|third [--cpu-dry-run]" >&2; exit 2 ;;
esac
export OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$OUT"
default_budget=420
[ "$call" = third ] && default_budget=560
budget=${SG2_SESSION_BUDGET_S:-$default_budget}
build=${GPU_BUILD_DIR:-build-gpu}
python=${PYTHON:-python3}
session_start=$(date +%s)
seconds_left() { echo $((budget - ($(date +%s) - session_start))); }

# The kit's binaries and packages first (the plugins' build needs the kit's ninja on the PATH), then
# the reference's plugins in the background, within the call's budget.
source scripts/gpu/kit_steps.sh
SG2_KIT_BUILD_LIMIT_S=${SG2_KIT_BUILD_LIMIT_S:-$(($(seconds_left) - 120))} \
  ensure_build "$build" > "$OUT/session.log" 2>&1 ||
  echo "session: no build (see $OUT/session.log); the kit's build step will say more" >&2
if [ ${#dry_run[@]} -eq 0 ] && [ -d .gpu-kit/stylegan2-ada-pytorch ]; then
  SG2_TORCH_EXTENSIONS_DIR=$(mktemp -d)
  export SG2_TORCH_EXTENSIONS_DIR
  plugin_seconds=$(seconds_left)
  [ "$plugin_seconds" -gt 0 ] || plugin_seconds=1  # timeout 0 would mean no limit
  TORCH_EXTENSIONS_DIR=$SG2_TORCH_EXTENSIONS_DIR timeout "$plugin_seconds" "$python" \
      scripts/bench/reference_bench.py --ref .gpu-kit/stylegan2-ada-pytorch --build-plugins >> "$OUT/session.log" 2>&1 &
fi

run_kit() {  # run_kit STEPS MAX_SECONDS
  local kit_seconds
  kit_seconds=$(seconds_left)
  [ "$kit_seconds" -le "$2" ] || kit_seconds=$2
  echo "== session $call: the kit's steps within ${kit_seconds} s"
  SG2_KIT_STEPS="$1" SG2_KIT_BUDGET_S=$kit_seconds SG2_KIT_STEP_LIMIT_S=${SG2_KIT_STEP_LIMIT_S:-120} \
      scripts/gpu/run.sh "${dry_run[@]}"
}

run_comparison() {  # run_comparison PRESET VARIANTS MAX_SECONDS
  local bench_seconds
  bench_seconds=$(($(seconds_left) - 5))
  [ "$bench_seconds" -le "$3" ] || bench_seconds=$3
  echo "== session $call: $1 against the reference within ${bench_seconds} s"
  SG2_BENCH_PRESETS=$1 SG2_BENCH_VARIANTS=$2 SG2_BENCH_BUDGET_S=$bench_seconds \
      SG2_BENCH_RUN_LIMIT_S=${SG2_BENCH_RUN_LIMIT_S:-150} scripts/bench/gpu_vs_reference.sh "${dry_run[@]}"
}

kit_failed=0 comparison_failed=0
if [ "$call" = first ]; then
  run_kit "$kit_first_call_steps" "${SG2_SESSION_KIT_S:-250}" || kit_failed=$?
  run_comparison config-f "$(comparison_variants "auto:nhwc auto:nhwc:3xtf32 auto:nhwc:graphs ref:off ref:off:graphs \
    reference:full auto:all")" "$budget" || comparison_failed=1
elif [ "$call" = third ]; then
  source scripts/gpu/third_call.sh
  third_call
else
  run_comparison paper256 "$(comparison_variants "auto:nhwc auto:nhwc:graphs ref:off ref:off:graphs auto:off ref:nhwc \
    reference:full")" $((budget * 3 / 5)) || comparison_failed=1
  run_kit "$kit_second_call_steps" "${SG2_SESSION_KIT_S:-$budget}" || kit_failed=$?
fi
wait  # the plugins' build, if it still runs (within the budget)
echo "== session $call: ${kit_failed} failed kit step(s), comparison $([ "$comparison_failed" = 0 ] && echo ok ||
  echo failed), $(($(date +%s) - session_start)) s of ${budget}"
exit $((kit_failed + comparison_failed))
