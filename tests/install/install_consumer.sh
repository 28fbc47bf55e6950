#!/usr/bin/env bash
# The installed library as another project uses it: cmake --install of the build into a fresh
# prefix (libraries, headers, programs, presets, the CMake package), then a consumer project
# (tests/install/consumer) configured with find_package(stylegan2-cpp) against that prefix alone,
# built and run; and an installed program finding its presets beside itself.
# Usage: install_consumer.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }
for file in lib/cmake/stylegan2-cpp/stylegan2-cppConfig.cmake lib/libsg2_nn.a include/sg2/nn/networks.h \
            bin/stylegan2_train share/stylegan2-cpp/configs/paper256.yaml; do
  [ -e "$work/prefix/$file" ] || fail "the install lacks $file"
done
# Presets beside the installed programs: a name the source tree does not have is found there only.
cp "$work/prefix/share/stylegan2-cpp/configs/fashion32.yaml" "$work/prefix/share/stylegan2-cpp/configs/installed-only.yaml"
"$work/prefix/bin/stylegan2_train" --cfg installed-only --data synthetic --data.resolution 32 --dry-run > "$work/dry.log" 2>&1 ||
  { cat "$work/dry.log"; fail "the installed stylegan2_train did not find an installed preset"; }

cmake -S "$src/tests/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "find_package(stylegan2-cpp)"; }
cmake --build "$work/consumer" -j2 > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the consumer"; }
"$work/consumer/consumer" || fail "the consumer's run"
echo "install_consumer: all checks passed"
