#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything, runs every test
# (unit tests per module, the parity checker on shared/fixtures, end-to-end runs of the apps).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
