#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything, runs every test
# (unit tests per module, the parity checker on shared/fixtures, end-to-end runs of the apps), then
# builds and tests again against the LibTorch of PyPI's torch==2.11.0 wheel (CUDA, see
# scripts/test_torch_wheel.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
# The same suite against PyPI's CUDA LibTorch 2.x, with every CUDA source compiled and linked
# (SG2_SKIP_TORCH_WHEEL=1 skips it for a quick local run).
[ "${SG2_SKIP_TORCH_WHEEL:-0}" = 1 ] || scripts/test_torch_wheel.sh
