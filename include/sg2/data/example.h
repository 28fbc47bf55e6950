#pragma once
// The tf.train.Example payload of a StyleGAN2 record: feature `shape` (int64_list [C, H, W]) and
// feature `data` (bytes_list with one element, the raw uint8 pixels in CHW order).

#include <cstdint>
#include <string>
#include <vector>

namespace sg2::data {

constexpr int64_t kMaxImageSide = 1 << 15;
constexpr int64_t kMaxImageChannels = 4;

struct ImageRecord {
  int64_t channels = 0, height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [C, H, W]
};

// Parses and validates one payload. `where` names the record in error messages (file, record,
// offset). Errors: not an Example, a missing or wrongly typed feature, an impossible shape, or a data
// size that does not match the shape.
ImageRecord decode_image_example(const uint8_t* payload, uint64_t size, const std::string& where);

// Serialises an image [C, H, W] as such an Example.
std::string encode_image_example(const uint8_t* pixels, int64_t channels, int64_t height, int64_t width);

}  // namespace sg2::data
