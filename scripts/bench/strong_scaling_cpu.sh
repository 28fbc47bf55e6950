#!/usr/bin/env bash
# Strong scaling on one CPU machine: the same global batch on 1 process x N threads and on N MPI
# ranks x 1 thread (bench-cpu-32 unless CONFIG is given), with and without overlapping the
# allreduce with backward, then the comm benchmark with the preset's bucket layout.
# Usage: scripts/bench/strong_scaling_cpu.sh [BUILD_DIR] [RANKS]
set -euo pipefail
build=${1:-build}
ranks=${2:-2}
config=${CONFIG:-configs/bench-cpu-32.yaml}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
bench=("$build/bin/stylegan2_bench" --config "$config" --no-op-families --cycles "${CYCLES:-2}")
echo "== 1 process x $ranks threads"
"${bench[@]}" --run.threads "$ranks"
echo "== $ranks ranks x 1 thread, overlap on"
mpirun --oversubscribe -np "$ranks" "${bench[@]}" --run.threads 1
echo "== $ranks ranks x 1 thread, overlap off"
mpirun --oversubscribe -np "$ranks" "${bench[@]}" --run.threads 1 --dist.overlap false
echo "== comm benchmark"
mpirun --oversubscribe -np "$ranks" "$build/bin/stylegan2_bench" comm --config "$config" --max-bytes 67108864
