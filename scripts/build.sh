#!/usr/bin/env bash
# Configures and builds in Release into ${BUILD_DIR:-build}. Extra arguments go to the build step
# (e.g. --target stylegan2_train). Set CMAKE_PREFIX_PATH for another LibTorch (a CUDA one).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
# Of CMake's output the warnings (stderr) and the configuration summary (what was found, and what is
# left out); all of it when it fails.
configure_log=$(mktemp)
trap 'rm -f "$configure_log"' EXIT
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release ${SG2_CMAKE_ARGS:-} > "$configure_log" ||
  { cat "$configure_log"; exit 1; }
sed -n '/StyleGAN2-cpp configuration:/,/unity build/p' "$configure_log"
cmake --build "$build_dir" -j "$(nproc)" "$@"
