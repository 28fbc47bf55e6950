#!/usr/bin/env bash
# The project built against the LibTorch of PyPI's torch wheel (2.11.0, CUDA 13.0: the one the lent
# GPU machines run) with the CUDA toolkit at /usr/local/cuda: every CUDA source (NCCL backend, CUDA
# kernels, src/device's CUDA streams, memory statistics and runtime queries) is compiled and linked,
# then the CPU test suite runs against that build. No GPU is needed. Called by scripts/test.sh after the Debian build;
# the build goes to ${TORCH_WHEEL_BUILD_DIR:-build-torch-wheel}.
set -euo pipefail
cd "$(dirname "$0")/.."
# Before the wheel's 800 MB download: without the toolkit nothing of this can build.
[ -x /usr/local/cuda/bin/nvcc ] || {
  echo "test_torch_wheel: the CUDA toolkit (/usr/local/cuda/bin/nvcc, with cuDNN and NCCL) is missing: this" \
    "build compiles every CUDA source against it (docs/building.md)" >&2
  exit 1
}
wheel_dir=$(scripts/torch_wheel.sh)
build_dir=${TORCH_WHEEL_BUILD_DIR:-build-torch-wheel}
echo "test_torch_wheel: building against $wheel_dir/torch into $build_dir"
BUILD_DIR=$build_dir \
SG2_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$wheel_dir/torch/share/cmake -DSG2_WITH_CUDA=ON -DSG2_WITH_NCCL=ON" \
  scripts/build.sh
# The object that compiled src/SOURCE: its own, or that of its unity batch (CMAKE_UNITY_BUILD: one
# translation unit that includes it); nothing where it was not compiled.
object_of() {
  local module=${1%%/*}
  local target_dir=$build_dir/src/$module/CMakeFiles/sg2_$module.dir batch
  if [ -f "$target_dir/${1#*/}.o" ]; then echo "$target_dir/${1#*/}.o"; return; fi
  batch=$(grep -l "/src/$1\"" "$target_dir"/Unity/unity_*.cxx 2> /dev/null | head -n 1) || true
  if [ -n "$batch" ] && [ -f "$batch.o" ]; then echo "$batch.o"; fi
}
# Every CUDA source must have been compiled (not its CPU stub)...
for source in distributed/nccl_backend.cpp ops/cuda/kernels_cuda.cpp ops/cuda/fir_bias_act_kernels.cu; do
  [ -n "$(object_of "$source")" ] || { echo "test_torch_wheel: src/$source was not compiled" >&2; exit 1; }
done
# ... and the device module with both of its CUDA parts: the runtime's and LibTorch's (its graphs too).
device_object=$(object_of device/cuda_device.cpp)
[ -n "$device_object" ] || { echo "test_torch_wheel: src/device/cuda_device.cpp was not compiled" >&2; exit 1; }
# (nm's whole output first: grep -q leaving early would end nm by SIGPIPE, a failure under pipefail)
device_symbols=$(nm -C "$device_object")
for symbol in cudaSetDevice getCurrentCUDAStream CUDAGraph::capture_begin; do
  grep -q " U .*$symbol" <<< "$device_symbols" ||
    { echo "test_torch_wheel: $device_object does not call $symbol: its CUDA part was not compiled" >&2; exit 1; }
done
# The CUDA libraries libtorch_cuda.so loads come from the toolkit; the three it lacks the wheel's
# RUNPATH finds in the cache.
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$build_dir"
# The AVX2-CPU runs (tests/cpu/as_avx2_cpu.sh) are emulated and slow: the Debian build runs them.
ctest --output-on-failure -j "$(nproc)" --timeout 900 -LE avx2_cpu
