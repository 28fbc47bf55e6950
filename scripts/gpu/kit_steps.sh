# The steps of scripts/gpu/run.sh (sourced): each records its status and time in the summary and
# its output in one log, so a GPU session's result comes back as two files.

kit_init() {  # kit_init OUT_DIR
  out=$1
  mkdir -p "$out"
  summary=$out/summary.md
  log=$out/steps.log
  failed=0
  : > "$log"
  printf '# GPU kit (%s mode), %s\n\n| step | status | seconds | last line |\n|---|---|---|---|\n' \
    "$mode" "$(date -u '+%Y-%m-%d %H:%M UTC')" > "$summary"
}

step() {  # step NAME COMMAND...: runs it, appends its output to the log, records ok / FAILED
  local name=$1 start rc seconds last
  shift
  echo "=== $name: $*" >> "$log"
  start=$(date +%s.%N)
  "$@" >> "$log" 2>&1
  rc=$?
  seconds=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
  last=$(tail -n 1 "$log" | tr '|' '/' | cut -c1-160)
  if [ "$rc" -eq 0 ]; then
    echo "| $name | ok | $seconds | $last |" >> "$summary"
  else
    failed=$((failed + 1))
    echo "| $name | FAILED (exit $rc) | $seconds | $last |" >> "$summary"
  fi
  echo "=== $name: exit $rc after $seconds s" >> "$log"
}

skip() {  # skip NAME REASON
  echo "| $1 | skipped | | $2 |" >> "$summary"
}

kit_finish() {
  {
    printf '\n%s failed step(s).\n\n## Numbers\n\n```\n' "$failed"
    grep -h -E "^tick .* sec/kimg|img/s|busbw|^# (compute|world)|entries compared|Compute:" "$log" | cut -c1-200
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
unpack_kit() {  # unpack_kit KIT_DIR PREFIX
  local kit=$1 prefix=$2 deb
  [ -d "$kit/debs" ] || { echo "no $kit/debs: run scripts/gpu/prepare.sh first and carry .gpu-kit"; return 1; }
  mkdir -p "$prefix"
  for deb in "$kit"/debs/*.deb; do
    if command -v dpkg > /dev/null; then
      dpkg -x "$deb" "$prefix" || return 1
    else
      (cd "$prefix" && ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x -J 2>/dev/null ||
        ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -x --zstd) || return 1
    fi
  done
  echo "unpacked $(ls "$kit"/debs/*.deb | wc -l) packages into $prefix"
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
  cmake --build "$build" -j "$(nproc)"
}

run_cpu_suite() {  # run_cpu_suite BUILD_DIR: every ctest test but the Slurm one
  (cd "$1" && ctest -j "$(( $(nproc) / 2 > 1 ? $(nproc) / 2 : 1 ))" -E '^slurm' --timeout 600 --output-on-failure)
}

# Runs COMMAND with the loader's trace: each of libnccl and libcudart must be loaded from one path.
check_single_library_copies() {
  local trace
  trace=$(mktemp)
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$trace" "$@" || return 1
  local lib copies status=0
  for lib in libnccl.so libcudart.so; do
    copies=$(cat "$trace".* | grep -o "calling init: [^ ]*$lib[^ ]*" | sort -u)
    echo "$lib: $(echo "$copies" | grep -c . ) cop(y/ies): $(echo "$copies" | tr '\n' ' ')"
    [ "$(echo "$copies" | grep -c .)" -le 1 ] || status=1
  done
  rm -f "$trace" "$trace".*
  return $status
}
