#!/usr/bin/env bash
# Configures and builds in Release into ${BUILD_DIR:-build}. Extra arguments go to the build step
# (e.g. --target stylegan2_train). Set CMAKE_PREFIX_PATH for another LibTorch (a CUDA one).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release ${SG2_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j "$(nproc)" "$@"
