# The arithmetic behind scripts/bench/gpu_vs_reference.sh's summary, sourced by it and tested by
# tests/scripts/gpu_kit_steps.sh: values of the benches' records (stylegan2_bench --jsonl and
# reference_bench.py --jsonl), ratios, goal checks, and config-f's estimate for an H100 SXM from an
# H200's profile.

# The value at KEY (dotted: "device_kernels.other_s") of the last record in the --jsonl FILE, times
# SCALE (default 1) to DIGITS decimals (default: as it is); nothing where the file, the record or
# the value is missing (a run that failed or was skipped).
field() {  # field FILE KEY [SCALE DIGITS]
  python3 - "$@" << 'PY'
import json, sys
path, key = sys.argv[1], sys.argv[2]
scale = float(sys.argv[3]) if len(sys.argv) > 3 else None
try:
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    value = json.loads(lines[-1]) if lines else None
except (OSError, ValueError):
    value = None
for part in key.split("."):
    value = value.get(part) if isinstance(value, dict) else None
if isinstance(value, bool):
    print("true" if value else "false")
elif isinstance(value, (int, float)) and scale is not None:
    print(f"{value * scale:.{int(sys.argv[4]) if len(sys.argv) > 4 else 6}f}")
elif value is not None:
    print(value)
PY
}
# The ms a step the host took to issue the bench's timed steps.
host_ms_per_step() { field "$1" host_s_per_step 1000 1; }
# A / B to two decimals, "-" where either is not a positive number.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-"}'; }
# "met" or "not met" for VALUE OP LIMIT (OP: >= or <=), "-" where VALUE is none.
meets() {  # meets VALUE OP LIMIT
  awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
    if (a == "" || a == "-") print "-"; else print ((op == ">=" ? a >= b : a <= b) ? "met" : "not met") }'
}

# The GPU time (ms) a profiled step spent in kernels other than convolutions and matrix products.
other_kernel_ms() { field "$1" device_kernels.other_s 1000 1; }
# An H100 SXM's memory bandwidth (3.35 TB/s) against this GPU's where that is an H200 (4.8 TB/s, the
# same GH100 chip: its SMs and clocks): how much longer a kernel bound by memory would take on an
# H100 SXM (the datasheets' ratio; the H200's copy reached 86% of its 4.8 TB/s).
h100_bandwidth_ratio() {  # h100_bandwidth_ratio GPU_NAME (nvidia-smi's); nothing for other GPUs
  case "$1" in *H200*) echo 1.433 ;; esac
}
# KIMG + (RATIO - 1) * OTHER_MS / BATCH: the s/kimg with every non-matrix kernel RATIO times as long
# and the convolutions and matrix products as long as before (a kernel's extra time can delay a step
# by no more than itself): docs/performance.md, "An H100 SXM, estimated", says what that assumes.
slowed_kimg() { awk -v k="$1" -v r="$2" -v o="$3" -v b="$4" 'BEGIN {printf "%.2f", k + (r - 1) * o / b}'; }
