// libFuzzer target for the TFRecord container and the tf.train.Example image parser: any input must
// either parse or raise sg2::Error, never crash, read out of bounds or allocate without bound.
// Built with clang by scripts/fuzz.sh; replayed over tests/fuzz/corpus by ctest (fuzz_replay).
#include "sg2/core/error.h"
#include "sg2/data/example.h"
#include "sg2/data/tfrecord.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The input as a TFRecord stream whose payloads are Examples ...
  try {
    sg2::data::parse_records(data, size, "fuzz", [](int64_t record, const uint8_t* payload, uint64_t length) {
      try {
        sg2::data::decode_image_example(payload, length, "fuzz record");
      } catch (const sg2::Error&) {
      }
    });
  } catch (const sg2::Error&) {
  }
  // ... and as a bare Example payload.
  try {
    sg2::data::decode_image_example(data, size, "fuzz payload");
  } catch (const sg2::Error&) {
  }
  return 0;
}
