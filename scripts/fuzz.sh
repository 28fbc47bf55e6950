#!/usr/bin/env bash
# Builds the record + Example parser fuzz target with clang's libFuzzer (ASan + UBSan) and runs it.
#   scripts/fuzz.sh [SECONDS]   (default 60; new inputs go to build-fuzz/corpus, not to the repo)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build-fuzz
mkdir -p "$out/gen" "$out/corpus"
command -v clang++ >/dev/null || { echo "fuzz.sh needs clang (apt-get install clang libclang-rt-dev)"; exit 1; }
protoc --cpp_out="$out/gen" --proto_path=src/data src/data/example.proto
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -I"$out/gen" \
  tests/fuzz/fuzz_records.cpp src/data/tfrecord.cpp src/data/read_only_file.cpp src/data/crc32c.cpp src/data/example.cpp \
  "$out/gen/example.pb.cc" src/core/error.cpp \
  $(pkg-config --cflags --libs protobuf) -lfmt -o "$out/fuzz_records"
cp -n tests/fuzz/corpus/records/* "$out/corpus/" 2>/dev/null || true
"$out/fuzz_records" -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 "$out/corpus"
