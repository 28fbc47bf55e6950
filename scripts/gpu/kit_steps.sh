# The steps of scripts/gpu/run.sh (sourced): each records its status and time in the summary and
# its output in one log, so a GPU session's result comes back as two files.

# The kit's clock: each step stops after SG2_KIT_STEP_LIMIT_S (default 240 s), and once
# SG2_KIT_BUDGET_S (default 540 s, inside a device call's 600) is spent the steps left are skipped,
# so a hung step costs its limit and not the call, and the summary always comes back.
kit_init() {  # kit_init OUT_DIR
  out=$1
  mkdir -p "$out"
  summary=$out/summary.md
  log=$out/steps.log
  failed=0
  kit_start=$(date +%s)
  kit_budget=${SG2_KIT_BUDGET_S:-540}
  : > "$log"
  printf '# GPU kit (%s mode), %s\n\n| step | status | seconds | last line |\n|---|---|---|---|\n' \
    "$mode" "$(date -u '+%Y-%m-%d %H:%M UTC')" > "$summary"
  export -f $(compgen -A function)  # steps run their functions in a shell of their own (under timeout)
}

# Seconds the next step may run: its limit, or what is left of the budget (0: none left).
step_seconds_left() {
  local left=$((kit_budget - ($(date +%s) - kit_start)))
  local limit=${SG2_KIT_STEP_LIMIT_S:-240}
  if [ "$left" -lt 10 ]; then echo 0; elif [ "$left" -lt "$limit" ]; then echo "$left"; else echo "$limit"; fi
}

# Whether this call runs step NAME: SG2_KIT_STEPS names the steps of a call (separated by spaces;
# unset or empty: every step). A GPU session's device time (15 minutes) holds one or two calls, and
# scripts/gpu/session.sh gives each call its steps.
step_selected() {  # step_selected NAME
  [ -n "${SG2_KIT_STEPS:-}" ] || return 0
  local name
  for name in $SG2_KIT_STEPS; do  # any white space between names
    [ "$name" = "$1" ] && return 0
  done
  return 1
}

# The steps of scripts/gpu/session.sh's two calls: the first, what issues 12 and 13 ask of the GPU
# itself, then the op bench, the kernels under memcheck (the CUDA kernels changed since the last
# run) and, last, run.cuda_graphs' test and a training with it (their first run anywhere: should a
# capture hang, it costs only their own short limit), with the comparison of config-f after them; the second, the rest
# (after paper256's comparison), with its own training for the FID check's snapshot (a call may
# land on a fresh machine). Every step of run.sh is in one of them (tests/scripts/gpu_kit_steps.sh checks).
kit_first_call_steps="gpu_tests nccl_collectives parity train resume_same_device resume_on_cpu resume_back_on_device
  train_nccl_reducer train_mixed_precision_batch_auto bench_comm train_host_sync_warnings train_without_host_sync
  bench_ops kernels_memcheck gpu_graphs train_cuda_graphs train_cuda_graphs_host_sync"
kit_second_call_steps="train cpu_suite train_detector fid_matches_cpu train_channels_last one_copy_of_each_library"

# scripts/gpu/session.sh's comparison variants, less the run.cuda_graphs ones where graphs are known
# not to work: SG2_SESSION_GRAPHS=off (the first call's graphs steps failed; a second call may find
# a fresh machine and an $OUT without that summary), or this call's gpu_graphs or train_cuda_graphs
# step failed or ran out of time (in $OUT/summary.md), so that a capture which hung there does not
# take a whole run's limit twice more.
comparison_variants() {  # comparison_variants VARIANTS
  local variant kept=()
  if [ "${SG2_SESSION_GRAPHS:-on}" = off ] ||
    grep -q '^| \(gpu_graphs\|train_cuda_graphs\) | FAILED' "${OUT:-gpu-results}/summary.md" 2>/dev/null; then
    echo "session: without the run.cuda_graphs variants (a graphs step failed, or SG2_SESSION_GRAPHS=off)" >&2
    for variant in $1; do [[ "$variant" == *:graphs ]] || kept+=("$variant"); done
    echo "${kept[*]}"
    return
  fi
  echo "$1"
}

step() {  # step NAME COMMAND...: runs it, where this call selects it, within step_seconds_left
  if ! step_selected "$1"; then
    skip "$1" "not in this call's steps (SG2_KIT_STEPS)"
    return 0
  fi
  step_always "$@"
}

step_always() {  # step_always NAME COMMAND...: step in every call's selection (the environment, the unpacking)
  local name=$1 limit
  shift
  limit=$(step_seconds_left)
  if [ "$limit" -eq 0 ]; then
    skip "$name" "the kit's ${kit_budget} s are spent (SG2_KIT_BUDGET_S)"
    return 0
  fi
  record_step "$name" "$limit" "$@"
}

step_in_shell() {  # step_in_shell NAME COMMAND...: for a step that sets later steps' environment (the build)
  local name=$1
  shift
  record_step "$name" "" "$@"
}

# Runs COMMAND (within LIMIT seconds in a shell of its own; in this one where LIMIT is empty),
# appends its output to the log and records ok / FAILED.
record_step() {  # record_step NAME LIMIT COMMAND...
  local name=$1 limit=$2 start rc seconds last status
  shift 2
  echo "=== $name: $*" >> "$log"
  start=$(date +%s.%N)
  if [ -n "$limit" ]; then
    timeout --kill-after=10 "$limit" bash -uo pipefail -c '"$@"' "$name" "$@" >> "$log" 2>&1
  else
    "$@" >> "$log" 2>&1
  fi
  rc=$?
  seconds=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
  last=$(tail -n 1 "$log" | tr '|' '/' | cut -c1-160)
  status="FAILED (exit $rc)"
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && status="FAILED (stopped at its time limit)"
  if [ "$rc" -eq 0 ]; then
    echo "| $name | ok | $seconds | $last |" >> "$summary"
  elif [ "$rc" -eq "$tool_refused_exit" ]; then
    echo "| $name | skipped | $seconds | $last |" >> "$summary"
  else
    failed=$((failed + 1))
    echo "| $name | $status | $seconds | $last |" >> "$summary"
  fi
  echo "=== $name: exit $rc after $seconds s" >> "$log"
}

# Runs COMMAND with its output (stdout and stderr) printed as it comes, so that a step stopped at its
# time limit keeps what it printed in the log, and copied to FILE for the checks below.
run_teed() {  # run_teed FILE COMMAND...: COMMAND's exit status
  local file=$1
  shift
  "$@" 2>&1 | tee "$file"
  return "${PIPESTATUS[0]}"
}

# run_teed into a temporary file, then pattern_found=yes|no: whether PATTERN is in the output.
run_finding() {  # run_finding PATTERN COMMAND...: COMMAND's exit status
  local pattern=$1 output rc=0
  shift
  output=$(mktemp)
  run_teed "$output" "$@" || rc=$?
  pattern_found=no
  grep -q -- "$pattern" "$output" && pattern_found=yes
  rm -f "$output"
  return "$rc"
}

# Runs COMMAND and prints its output; fails when it fails, or when PATTERN is not as wanted in it.
output_has() {  # output_has yes|no PATTERN COMMAND...
  local want=$1 pattern=$2
  shift 2
  run_finding "$pattern" "$@" || return $?
  [ "$pattern_found" = "$want" ] ||
    { echo "output_has: '$pattern' found: $pattern_found, wanted: $want (in the output of $1)"; return 1; }
}
says() { output_has yes "$@"; }   # says PATTERN COMMAND...: fails when it fails or never prints PATTERN
lacks() { output_has no "$@"; }   # lacks PATTERN COMMAND...: fails when it fails or prints PATTERN

# A step's exit code for "the tool cannot run on this machine", which the summary shows as skipped.
export tool_refused_exit=77  # exported: steps run in shells of their own

# Runs COMMAND and prints its output; where it fails with PATTERN in its output (the tool refusing
# this machine, as compute-sanitizer refuses a GPU under gVisor: "Device not supported"), it says so
# and ends with tool_refused_exit instead of failing the step.
unless_refused() {  # unless_refused PATTERN COMMAND...
  local pattern=$1 rc=0
  shift
  run_finding "$pattern" "$@" || rc=$?
  [ "$rc" -ne 0 ] && [ "$pattern_found" = yes ] || return "$rc"
  echo "the tool cannot run on this machine (it printed '$pattern'): no result about the code under test"
  return "$tool_refused_exit"
}

skip() {  # skip NAME REASON
  echo "| $1 | skipped | | $2 |" >> "$summary"
}

kit_finish() {
  {
    printf '\n%s failed step(s).\n\n## Numbers\n\n```\n' "$failed"
    grep -h -E "^tick .* sec/kimg|img/s|busbw|^# (compute|world)|entries compared|Compute:|^fid2k_full:" "$log" |
      cut -c1-200
    printf '```\n'
  } >> "$summary"
  cat "$summary"
  exit "$failed"
}

report_environment() {
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'
  nvcc --version 2>&1 | tail -n 1 || echo "no nvcc"
  cmake --version | head -n 1
  echo "cores: $(nproc)"
}

# Debian packages into a private prefix (dpkg -x, or ar + tar where dpkg is missing).
# A kit's files unpacked once: the same kit again leaves PREFIX as it is, so a step unpacking it while
# another starts programs from it (the third call runs them side by side) rewrites nothing under them.
unpack_kit() {  # unpack_kit KIT_DIR PREFIX
  local kit=$1 prefix=$2 deb tarball stamp
  [ -d "$kit/debs" ] || { echo "no $kit/debs: run scripts/gpu/prepare.sh first and carry .gpu-kit"; return 1; }
  stamp=$(cd "$kit/debs" && ls -l --time-style=+%s | md5sum)
  if [ "$(cat "$prefix/.kit-stamp" 2> /dev/null)" = "$stamp" ]; then
    echo "the kit's packages are unpacked in $prefix already"
    return 0
  fi
  mkdir -p "$prefix"
  for deb in "$kit"/debs/*.deb; do
    if command -v dpkg > /dev/null; then
      dpkg -x "$deb" "$prefix" || return 1
    else
      (cd "$prefix" && ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x -J 2>/dev/null ||
        ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x --zstd) || return 1
    fi
  done
  for tarball in "$kit"/debs/*.tar; do  # files taken out of a package (prepare.sh)
    [ -e "$tarball" ] || continue
    tar -xf "$tarball" -C "$prefix" || return 1
  done
  echo "$stamp" > "$prefix/.kit-stamp"
  echo "unpacked $(ls "$kit"/debs/*.deb | wc -l) packages and $(ls "$kit"/debs/*.tar 2>/dev/null | wc -l) tar files into $prefix"
}

use_prefix() {  # use_prefix PREFIX: its programs, libraries and the Fashion-MNIST files
  local prefix=$1
  export PATH="$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ ! -e /usr/share/datasets/fashion-mnist ] && [ -d "$prefix/usr/share/datasets/fashion-mnist" ]; then
    mkdir -p /usr/share/datasets && ln -s "$prefix/usr/share/datasets/fashion-mnist" /usr/share/datasets/fashion-mnist
  fi
}

# The directory of the NCCL that PyTorch loads (the nvidia-nccl wheel), else the CUDA toolkit's.
pytorch_nccl_root() {
  python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || echo /usr/local/cuda
}

build_against_pytorch() {  # build_against_pytorch BUILD_DIR PREFIX
  local build=$1 prefix=$2 torch_prefix generator=()
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)') || return 1
  command -v ninja > /dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$torch_prefix;$prefix/usr" -DSG2_WITH_CUDA=ON -DSG2_WITH_NCCL=ON \
      -DNCCL_ROOT="$(pytorch_nccl_root)" -DSG2_SHARED_DIR="$PWD/.gpu-kit" || return 1
  grep -E "^(Protobuf_LIBRARY_RELEASE|yaml-cpp_DIR|spdlog_DIR|NCCL_LIBRARY|Torch_DIR):" "$build/CMakeCache.txt"
  local limit
  limit=$(build_seconds)
  echo "build: at most $limit s"
  timeout --kill-after=10 "$limit" cmake --build "$build" -j "$(nproc)"
}

# How long a build may take: SG2_KIT_BUILD_LIMIT_S, else what the kit's budget has left less a minute
# (a device call must still end with its summary), else 1800 s.
build_seconds() {
  local left
  if [ -n "${SG2_KIT_BUILD_LIMIT_S:-}" ]; then
    left=$SG2_KIT_BUILD_LIMIT_S
  elif [ -n "${kit_start:-}" ]; then
    left=$((kit_budget - ($(date +%s) - kit_start) - 60))
  else
    left=1800
  fi
  echo $((left > 10 ? left : 10))
}

# The folder of the machine's torch package, found without importing it (an import takes seconds,
# and a call looks for it several times).
torch_package_dir() {
  python3 -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("torch").origin))'
}

# torch.__version__ of the torch package in DIR (its version.py), as prepare.sh records the wheel's.
torch_version_in() {  # torch_version_in TORCH_PACKAGE_DIR
  sed -n "s/^__version__ = '\(.*\)'$/\1/p" "$1/version.py"
}

# The library folders of the machine's PyTorch: torch/lib, then the nvidia-* wheels' lib folders
# (cudart, cuDNN, NCCL, ...), then the CUDA toolkit's; prebuilt binaries on this path load the very
# copies PyTorch loads.
pytorch_library_path() {
  python3 - << 'EOF_PY'
import glob, importlib.util, os
folders = [os.path.join(os.path.dirname(importlib.util.find_spec("torch").origin), "lib")]
nvidia = importlib.util.find_spec("nvidia")
for root in (nvidia.submodule_search_locations or []) if nvidia else []:
    folders += sorted(d for d in glob.glob(os.path.join(root, "**", "lib"), recursive=True) if os.path.isdir(d))
folders += [d for d in ("/usr/local/cuda/lib64",) if os.path.isdir(d)]
print(":".join(folders))
EOF_PY
}

# Whether KIT/prebuilt (scripts/gpu/prepare.sh --prebuilt) was built against this machine's PyTorch.
prebuilt_matches() {  # prebuilt_matches KIT
  local torch_dir
  [ -f "$1/prebuilt/torch-version" ] && torch_dir=$(torch_package_dir 2>/dev/null) &&
    [ "$(torch_version_in "$torch_dir")" = "$(cat "$1/prebuilt/torch-version")" ]
}

# The prebuilt binaries where a build puts them, with PyTorch's libraries and the kit's paths set.
install_prebuilt() {  # install_prebuilt KIT BUILD_DIR
  local kit=$1 build=$2 torch_libraries missing stamp
  mkdir -p "$build"
  stamp=$(md5sum < "$kit/prebuilt/binaries.tar.gz")
  if [ "$(cat "$build/.prebuilt-stamp" 2> /dev/null)" != "$stamp" ]; then  # once (as unpack_kit)
    tar -xzf "$kit/prebuilt/binaries.tar.gz" -C "$build" || return 1
    echo "$stamp" > "$build/.prebuilt-stamp"
  fi
  torch_libraries=$(pytorch_library_path) || return 1
  export LD_LIBRARY_PATH="$torch_libraries${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export SG2_TEST_SOURCE_DIR=$PWD SG2_TEST_SHARED_DIR=$PWD/$kit
  missing=$(ldd "$build/bin/stylegan2_train" "$build/tests/test_dist" | { grep "not found" || true; } | sort -u)
  [ -z "$missing" ] || { echo "prebuilt binaries: libraries not found: $missing"; return 1; }
  echo "prebuilt binaries of $(cat "$kit/prebuilt/commit") against torch $(cat "$kit/prebuilt/torch-version")"
}

# The kit's prebuilt binaries where they match this PyTorch (unless SG2_KIT_BUILD=1), else a build.
provide_build() {  # provide_build BUILD_DIR PREFIX
  if [ "${SG2_KIT_BUILD:-0}" != 1 ] && prebuilt_matches .gpu-kit; then
    install_prebuilt .gpu-kit "$1"
  else
    build_against_pytorch "$1" "$2"
  fi
}

# For the bench scripts, on a machine fresh or warm: the kit unpacked, then provide_build (a copy of
# the prebuilt binaries, or a build that is a no-op when one is there).
ensure_build() {  # ensure_build BUILD_DIR
  local deps=${SG2_KIT_PREFIX:-/tmp/sg2-deps}
  unpack_kit .gpu-kit "$deps" || return 1  # once: its stamp makes a second call a no-op
  use_prefix "$deps"
  provide_build "$1" "$deps"
}

# parity_check on DEVICE for each FIXTURE.pt (beside its .json), with the reference ops and with the
# fast kernels; fails when one fails.
parity_on() {  # parity_on PARITY_CHECK DEVICE FIXTURE.pt...
  local checker=$1 device=$2 fixture ops status=0
  shift 2
  for fixture in "$@"; do
    for ops in "" --kernels; do
      echo "--- $fixture ${ops:-(reference ops)}"
      "$checker" "$fixture" "${fixture%.pt}.json" --device "$device" $ops || status=1
    done
  done
  return $status
}

# Runs each "BINARY|GTEST_FILTER" (BINARY under BUILD_DIR) briefly; fails when one fails.
run_filtered_tests() {  # run_filtered_tests BUILD_DIR "BINARY|FILTER"...
  local build=$1 binary filter status=0
  shift
  for binary in "$@"; do
    filter=${binary##*|}
    binary=$build/${binary%|*}
    echo "--- $binary ($filter)"
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} "$binary" --gtest_brief=1 --gtest_filter="$filter" || status=1
  done
  return $status
}

# Every ctest test but the Slurm one in a build tree. With prebuilt binaries (no build tree): the
# test binaries with CUDA tests, the multi-rank one as a world of one, and of test_train and
# test_metrics their GPU tests and what those build on (the trainer's, the G_ema update's, precision
# and recall's; their other tests are the very ones CI runs on a CPU).
run_cpu_suite() {  # run_cpu_suite BUILD_DIR
  local build=$1
  if [ -f "$build/CTestTestfile.cmake" ]; then
    (cd "$build" && ctest -j "$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))" -E '^slurm' --timeout 600 --output-on-failure)
    return
  fi
  run_filtered_tests "$build" "bin/test_ops|*" "bin/test_nn|*" "bin/test_device|*" "tests/test_dist|*" "bin/test_train|Trainer.*:Ema.*" \
      "bin/test_metrics|PrecisionRecall.*"
}

# The tests that need a GPU, and nothing else (the others are the CPU suite's, which CI runs): the
# CUDA kernels against their reference ops (every FIR case and precision, second-order derivatives),
# the FIR kernel each filter of a float16 channels_last step takes (lanes), the device module (the
# CUDA allocator's counts, the host-sync check on CUDA tensors), a trainer's phases with no host
# wait, its regularizers' convolutions through conv2d_gradfix in float32 and float16 (no feature
# map as a kernel, no weight gradient in a first backward), its phases replayed from CUDA graphs
# against the same steps without, the G_ema update and precision/recall
# on the GPU against the CPU, and ADA's augmentation pipeline against the reference's fixtures.
gpu_tests=("bin/test_ops|CudaKernels.*"
           "bin/test_nn|ChannelsLastNetworks.EveryFeatureMapFilterOfAStepTakesTheLanesKernel"
           "bin/test_device|*"
           "bin/test_train|Trainer.NoStepMakesTheHostWaitForTheGpu:Ema.*:Conv2dGradfix.*:Tf32Split.*:ChannelsLastRegularization.*:Augment.OnTheGpu*"
           "bin/test_metrics|PrecisionRecall.TheGpuCountsAsTheCpu")

# fid2k_full of SNAPSHOT (a fashion32 run limited to 4096 images) on DEVICE, its real statistics
# computed there too (a cache of their own): the value.
# The value of METRIC in stylegan2_metrics' JSON lines on standard input (the "value" of a metric of
# one number).
metric_value() {  # metric_value METRIC
  sed -n "s/.*\"metric\":\"$1\".*\"value\":\([^,}]*\).*/\1/p"
}

fid_on() {  # fid_on METRICS_BIN SNAPSHOT DETECTOR DEVICE CACHE_DIR
  local output rc=0
  output=$(mktemp)
  run_teed "$output" "$1" --network "$2" --config configs/fashion32.yaml --data.max_images 4096 --detector "$3" \
    --metrics fid2k_full --no-log --run.device "$4" --metric.cache_dir "$5" >&2 || rc=$?
  [ "$rc" -ne 0 ] || metric_value fid2k_full < "$output"
  rm -f "$output"
  return "$rc"
}

# The evaluator on DEVICE (detector, fakes, feature statistics) against the CPU on one snapshot: both
# finite and within 3 %. The fakes' noise is drawn on each device; other metric seeds move this
# fid2k_full by under 0.5 % (158.34, 158.75, 158.84 on the CPU).
fid_matches_cpu() {  # fid_matches_cpu METRICS_BIN SNAPSHOT DETECTOR DEVICE WORK_DIR
  local on_device on_cpu
  on_device=$(fid_on "$1" "$2" "$3" "$4" "$5/cache-$4") || return 1
  on_cpu=$(fid_on "$1" "$2" "$3" cpu "$5/cache-cpu") || return 1
  echo "fid2k_full: $on_device on $4, $on_cpu on cpu"
  awk -v a="$on_device" -v b="$on_cpu" 'BEGIN {
    number = "^[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$"  # finite and not negative: nan and inf fail
    exit !(a ~ number && b ~ number && b > 0 && a - b <= 0.03 * b && b - a <= 0.03 * b) }' ||
    { echo "fid_matches_cpu: the two differ by more than 3 % (or one is not a finite number)"; return 1; }
}

# Runs COMMAND with the loader's trace: each of libnccl and libcudart must be loaded from one path.
check_single_library_copies() {
  local trace
  trace=$(mktemp)
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$trace" "$@" || { rm -f "$trace" "$trace".*; return 1; }
  local lib copies status=0
  for lib in libnccl.so libcudart.so; do
    copies=$(cat "$trace".* | grep -o "calling init: [^ ]*$lib[^ ]*" | sort -u)
    echo "$lib: $(echo "$copies" | grep -c . ) cop(y/ies): $(echo "$copies" | tr '\n' ' ')"
    [ "$(echo "$copies" | grep -c .)" -le 1 ] || status=1
  done
  rm -f "$trace" "$trace".*
  return $status
}
