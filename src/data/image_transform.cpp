#include "sg2/data/image_transform.h"

#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"

#include <algorithm>
#include <cmath>

namespace sg2::data {

namespace {

struct FilterKernel {
  double support;
  double (*weight)(double);
};

// Pillow's filters (libImaging/Resample.c), boundaries included: a box takes (-0.5, 0.5].
double box_weight(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double sinc(double x) {
  if (x == 0.0) return 1.0;
  const double px = M_PI * x;
  return std::sin(px) / px;
}

double lanczos_weight(double x) { return (x >= -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

FilterKernel kernel_of(ResizeFilter filter) {
  return filter == ResizeFilter::box ? FilterKernel{0.5, box_weight} : FilterKernel{3.0, lanczos_weight};
}

// Pillow's fixed-point taps for 8-bit images: weights scaled by 2^22, sums rounded by adding half.
constexpr int kPrecisionBits = 32 - 8 - 2;

// Taps of a 1-D resampling from in_size to out_size samples, as Pillow computes them: the window of
// each output sample, its weights normalised in double, then rounded to fixed point.
struct Taps {
  std::vector<int64_t> first;           // [out] first input index
  std::vector<std::vector<int32_t>> w;  // [out][taps]
};

Taps compute_taps(int64_t in_size, int64_t out_size, ResizeFilter filter) {
  const FilterKernel kernel = kernel_of(filter);
  const double scale = double(in_size) / double(out_size);
  const double stretch = std::max(scale, 1.0);  // widen the filter when shrinking (antialiasing)
  const double support = kernel.support * stretch;
  Taps taps;
  for (int64_t o = 0; o < out_size; ++o) {
    const double center = (double(o) + 0.5) * scale;
    const auto lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
    const auto hi = std::min<int64_t>(int64_t(center + support + 0.5), in_size);
    std::vector<double> weights;
    double total = 0;
    for (int64_t i = lo; i < hi; ++i) {
      weights.push_back(kernel.weight((double(i) - center + 0.5) / stretch));
      total += weights.back();
    }
    std::vector<int32_t> fixed;
    for (double w : weights) {
      const double normalised = total != 0 ? w / total : 0;
      fixed.push_back(static_cast<int32_t>(normalised * (1 << kPrecisionBits) + (normalised < 0 ? -0.5 : 0.5)));
    }
    taps.first.push_back(lo);
    taps.w.push_back(std::move(fixed));
  }
  return taps;
}

// A fixed-point sum back to a byte: floor division by 2^22 (the half was added first), clamped.
uint8_t clip8(int32_t sum) { return static_cast<uint8_t>(std::clamp(sum >> kPrecisionBits, 0, 255)); }

// One pass along an axis: out[o] = sum of taps(o) over in, for every line across the axis.
//   in  [lines, in_size, inner] -> out [lines, out_size, inner]
std::vector<uint8_t> resample_axis(const std::vector<uint8_t>& in, int64_t lines, int64_t in_size, int64_t inner,
                                   int64_t out_size, ResizeFilter filter) {
  const Taps taps = compute_taps(in_size, out_size, filter);
  std::vector<uint8_t> out(static_cast<size_t>(lines * out_size * inner));
  for (int64_t line = 0; line < lines; ++line) {
    for (int64_t o = 0; o < out_size; ++o) {
      const auto& w = taps.w[size_t(o)];
      const uint8_t* first = in.data() + (line * in_size + taps.first[size_t(o)]) * inner;
      for (int64_t i = 0; i < inner; ++i) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (size_t t = 0; t < w.size(); ++t) sum += int32_t(first[int64_t(t) * inner + i]) * w[t];
        out[size_t((line * out_size + o) * inner + i)] = clip8(sum);
      }
    }
  }
  return out;
}

}  // namespace

ResizeFilter parse_resize_filter(const std::string& name) {
  constexpr EnumNames<ResizeFilter, 2> filters{{{ResizeFilter::box, "box"}, {ResizeFilter::lanczos, "lanczos"}}};
  return parse_enum(filters, name, "resize filter");
}

Image center_crop_square(const Image& image) {
  const int64_t side = std::min(image.width, image.height);
  const int64_t top = (image.height - side) / 2, left = (image.width - side) / 2;
  Image out{side, side, image.channels, {}};
  out.pixels.resize(static_cast<size_t>(side * side * image.channels));
  for (int64_t y = 0; y < side; ++y) {
    const uint8_t* row = image.pixels.data() + ((top + y) * image.width + left) * image.channels;
    std::copy(row, row + side * image.channels, out.pixels.begin() + y * side * image.channels);
  }
  return out;
}

// Pillow's Image.resize of an 8-bit image: the horizontal pass (where the width changes) into an 8-bit
// image, then the vertical one, both in fixed point, so the bytes are those of stylegan2-ada-pytorch's
// dataset_tool (Pillow's LANCZOS or BOX).
Image resize_image(const Image& image, int64_t width, int64_t height, ResizeFilter filter) {
  if (width == image.width && height == image.height) return image;
  const int64_t c = image.channels;
  std::vector<uint8_t> pixels = image.pixels;  // [H, W, C]
  if (width != image.width) pixels = resample_axis(pixels, image.height, image.width, c, width, filter);
  if (height != image.height) pixels = resample_axis(pixels, 1, image.height, width * c, height, filter);
  return Image{width, height, c, std::move(pixels)};
}

Image convert_channels(const Image& image, int64_t channels) {
  SG2_CHECK(channels == 1 || channels == 3, "images can be converted to 1 or 3 channels, not {}", channels);
  Image out{image.width, image.height, channels, {}};
  const int64_t count = image.width * image.height;
  out.pixels.resize(static_cast<size_t>(count * channels));
  for (int64_t p = 0; p < count; ++p) {
    const uint8_t* in = image.pixels.data() + p * image.channels;
    uint8_t* dst = out.pixels.data() + p * channels;
    if (image.channels < 3) {
      std::fill(dst, dst + channels, in[0]);
    } else if (channels == 1) {
      dst[0] = static_cast<uint8_t>((in[0] * 19595u + in[1] * 38470u + in[2] * 7471u + 0x8000u) >> 16);
    } else {
      std::copy(in, in + 3, dst);
    }
  }
  return out;
}

Image apply_transform(const Image& image, const ImageTransform& transform) {
  Image out = image;
  const int64_t channels = transform.channels > 0 ? transform.channels : (image.channels == 4 ? 3 : image.channels);
  if (channels != image.channels) out = convert_channels(out, channels);
  if (transform.resolution > 0) {
    if (out.width != out.height) out = center_crop_square(out);
    out = resize_image(out, transform.resolution, transform.resolution, transform.filter);
  }
  return out;
}

}  // namespace sg2::data
