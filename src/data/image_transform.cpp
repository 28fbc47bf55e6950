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

double box_weight(double x) { return (x >= -0.5 && x < 0.5) ? 1.0 : 0.0; }

double sinc(double x) {
  if (x == 0.0) return 1.0;
  const double px = M_PI * x;
  return std::sin(px) / px;
}

double lanczos_weight(double x) { return (x > -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

FilterKernel kernel_of(ResizeFilter filter) {
  return filter == ResizeFilter::box ? FilterKernel{0.5, box_weight} : FilterKernel{3.0, lanczos_weight};
}

// Normalised taps of a 1-D resampling from in_size to out_size samples.
struct Taps {
  std::vector<int64_t> first;          // [out] first input index
  std::vector<std::vector<double>> w;  // [out][taps]
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
    for (double& w : weights) w = total != 0 ? w / total : 0;
    taps.first.push_back(lo);
    taps.w.push_back(std::move(weights));
  }
  return taps;
}

uint8_t to_byte(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

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

Image resize_image(const Image& image, int64_t width, int64_t height, ResizeFilter filter) {
  if (width == image.width && height == image.height) return image;
  const int64_t c = image.channels;
  // Horizontal pass into doubles [H, width, C], then vertical into bytes [height, width, C].
  const Taps horizontal = compute_taps(image.width, width, filter);
  std::vector<double> rows(static_cast<size_t>(image.height * width * c));
  for (int64_t y = 0; y < image.height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        double sum = 0;
        const auto& w = horizontal.w[size_t(x)];
        for (size_t t = 0; t < w.size(); ++t) {
          sum += w[t] * image.pixels[size_t((y * image.width + horizontal.first[size_t(x)] + int64_t(t)) * c + k)];
        }
        rows[size_t((y * width + x) * c + k)] = sum;
      }
    }
  }
  const Taps vertical = compute_taps(image.height, height, filter);
  Image out{width, height, c, std::vector<uint8_t>(size_t(width * height * c))};
  for (int64_t y = 0; y < height; ++y) {
    const auto& w = vertical.w[size_t(y)];
    for (int64_t i = 0; i < width * c; ++i) {
      double sum = 0;
      for (size_t t = 0; t < w.size(); ++t) sum += w[t] * rows[size_t((vertical.first[size_t(y)] + int64_t(t)) * width * c + i)];
      out.pixels[size_t(y * width * c + i)] = to_byte(sum);
    }
  }
  return out;
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
