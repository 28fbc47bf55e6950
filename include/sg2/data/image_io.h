#pragma once
// PNG (libpng) and JPEG (libjpeg-turbo) images, and image grids as the reference's save_image_grid writes them.

#include "sg2/core/files.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sg2::data {

struct Image {
  int64_t width = 0, height = 0, channels = 0;  // channels: 1 (gray), 3 (RGB) or 4 (RGBA)
  std::vector<uint8_t> pixels;                  // [height, width, channels]
};

constexpr uint32_t kMaxDecodedSide = 1 << 15;  // larger images are refused before decoding

void write_png(const std::string& path, const Image& image);
Image read_png(const std::string& path);  // 8-bit gray, gray+alpha (alpha dropped), RGB or RGBA

// In memory; `name` is used in error messages.
std::vector<uint8_t> encode_png(const Image& image, int compression_level = 6);
Image decode_png(const uint8_t* data, size_t size, const std::string& name);
Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name);  // gray or RGB
Image decode_image(const uint8_t* data, size_t size, const std::string& name);  // PNG or JPEG by signature

// Layout conversions between Image ([H, W, C]) and the datasets' planar [C, H, W] bytes.
Image image_from_chw(const uint8_t* chw, int64_t channels, int64_t height, int64_t width);
void image_to_chw(const Image& image, uint8_t* chw);

using sg2::read_file_bytes;  // core/files.h

// float images [N, C, H, W] with values in [lo, hi] -> uint8 [N, C, H, W] (rounded, clipped).
at::Tensor to_uint8(const at::Tensor& images, double lo, double hi);

// Tiles N = grid_w * grid_h images [N, C, H, W] (uint8) row by row into one image.
Image tile_grid(const at::Tensor& images_uint8, int64_t grid_w, int64_t grid_h);

// Grid layout of the reference: gw = clip(7680 / W, 7, 32), gh = clip(4320 / H, 4, 32).
std::pair<int64_t, int64_t> default_grid_size(int64_t height, int64_t width);

}  // namespace sg2::data
