# The arithmetic and parsing behind scripts/bench/gpu_vs_reference.sh's summary, sourced by it and
# tested by tests/scripts/gpu_kit_steps.sh: fields of stylegan2_bench's output, ratios, goal checks,
# and config-f's estimate for an H100 SXM from an H200's profile.

# Field N of the "throughput X img/s, Y s/kimg; ... peak device memory Z GiB" line.
field() { awk -v n="$2" '/^throughput/ {gsub(/[,;]/, ""); print $n}' "$1"; }
# The ms a step the host took to issue the bench's timed steps.
host_ms_per_step() { sed -n 's/.*the host issued them in \([0-9.]*\) ms a step.*/\1/p' "$1"; }
# A / B to two decimals, "-" where either is not a positive number.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-"}'; }
# "met" or "not met" for VALUE OP LIMIT (OP: >= or <=), "-" where VALUE is none.
meets() {  # meets VALUE OP LIMIT
  awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN {
    if (a == "" || a == "-") print "-"; else print ((op == ">=" ? a >= b : a <= b) ? "met" : "not met") }'
}

# The GPU time a profiled step spent in kernels other than convolutions and matrix products.
other_kernel_ms() { sed -n 's/^GPU time per step by kind: .*, other kernels \([0-9.]*\) ms.*/\1/p' "$1"; }
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
