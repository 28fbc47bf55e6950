#pragma once
// What `stylegan2_dataset create` does to arbitrary photographs: center crop to a square, resize
// with a selectable filter (Pillow's separable fixed-point resampling, byte for byte, antialiased
// when shrinking), and channel conversion (RGB <-> grayscale with the ITU-R 601 luma weights PIL
// uses).

#include "sg2/data/image_io.h"

#include <string>

namespace sg2::data {

enum class ResizeFilter { box, lanczos };
ResizeFilter parse_resize_filter(const std::string& name);  // "box" or "lanczos"

Image center_crop_square(const Image& image);
Image resize_image(const Image& image, int64_t width, int64_t height, ResizeFilter filter);
Image convert_channels(const Image& image, int64_t channels);  // to 1 (gray) or 3 (RGB); drops alpha

struct ImageTransform {
  int64_t resolution = 0;  // 0: keep the size (images must then be square already)
  int64_t channels = 0;    // 0: keep
  ResizeFilter filter = ResizeFilter::lanczos;
  bool active() const { return resolution > 0 || channels > 0; }
};
Image apply_transform(const Image& image, const ImageTransform& transform);

}  // namespace sg2::data
