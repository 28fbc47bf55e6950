#include "sg2/data/image_io.h"

#include "sg2/data/atomic_file.h"

#include "sg2/core/error.h"

#include <png.h>

#include <csetjmp>
#include <cstring>
#include <cstdio>
#include <memory>

namespace sg2::data {

namespace {

// libpng reports errors through longjmp; this keeps its message for the exception.
struct PngErrorMessage {
  std::string text;
};
void on_png_error(png_structp png, png_const_charp message) {
  static_cast<PngErrorMessage*>(png_get_error_ptr(png))->text = message;
  png_longjmp(png, 1);
}
void on_png_warning(png_structp, png_const_charp) {}

int color_type_for(int64_t channels) {
  switch (channels) {
    case 1: return PNG_COLOR_TYPE_GRAY;
    case 3: return PNG_COLOR_TYPE_RGB;
    case 4: return PNG_COLOR_TYPE_RGBA;
    default: SG2_FAIL("PNG images need 1, 3 or 4 channels, got {}", channels);
  }
}

}  // namespace

namespace {

// Bytes in memory as a libpng input stream.
struct PngSource {
  const uint8_t* data;
  size_t size, offset;
};
void read_from_memory(png_structp png, png_bytep out, png_size_t count) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (count > source->size - source->offset) png_error(png, "unexpected end of data");
  std::memcpy(out, source->data + source->offset, count);
  source->offset += count;
}
void write_to_memory(png_structp png, png_bytep data, png_size_t count) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + count);
}
void flush_nothing(png_structp) {}

}  // namespace

std::vector<uint8_t> encode_png(const Image& image, int compression_level) {
  const int color_type = color_type_for(image.channels);
  SG2_CHECK(static_cast<int64_t>(image.pixels.size()) == image.width * image.height * image.channels,
            "encode_png: {} bytes for a {}x{}x{} image", image.pixels.size(), image.width, image.height,
            image.channels);
  PngErrorMessage error;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &error, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  SG2_CHECK(png && info, "libpng could not allocate a writer");
  std::vector<png_bytep> rows(static_cast<size_t>(image.height));
  std::vector<uint8_t> out;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    SG2_FAIL("encoding a {}x{} PNG failed: {}", image.width, image.height, error.text);
  }
  png_set_write_fn(png, &out, write_to_memory, flush_nothing);
  png_set_compression_level(png, compression_level);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width), static_cast<png_uint_32>(image.height), 8, color_type,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  for (int64_t y = 0; y < image.height; ++y) {
    rows[static_cast<size_t>(y)] = const_cast<png_bytep>(image.pixels.data() + y * image.width * image.channels);
  }
  png_set_rows(png, info, rows.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

Image decode_png(const uint8_t* data, size_t size, const std::string& name) {
  SG2_CHECK(size >= 8 && png_sig_cmp(data, 0, 8) == 0, "'{}' is not a PNG file", name);
  PngErrorMessage error;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &error, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  SG2_CHECK(png && info, "libpng could not allocate a reader for '{}'", name);
  png_set_user_limits(png, kMaxDecodedSide, kMaxDecodedSide);
  Image image;
  PngSource source{data, size, 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    SG2_FAIL("reading PNG '{}' failed: {}", name, error.text);
  }
  png_set_read_fn(png, &source, read_from_memory);
  // Normalise to 8-bit gray / RGB / RGBA; gray+alpha loses its alpha.
  png_read_png(png, info, PNG_TRANSFORM_STRIP_16 | PNG_TRANSFORM_PACKING | PNG_TRANSFORM_EXPAND, nullptr);
  image.width = png_get_image_width(png, info);
  image.height = png_get_image_height(png, info);
  const int stored = png_get_channels(png, info);
  image.channels = (stored == 2) ? 1 : stored;
  png_bytepp rows = png_get_rows(png, info);
  image.pixels.resize(static_cast<size_t>(image.width * image.height * image.channels));
  for (int64_t y = 0; y < image.height; ++y) {
    for (int64_t x = 0; x < image.width; ++x) {
      for (int64_t c = 0; c < image.channels; ++c) {
        image.pixels[static_cast<size_t>((y * image.width + x) * image.channels + c)] = rows[y][x * stored + c];
      }
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return image;
}

Image image_from_chw(const uint8_t* chw, int64_t channels, int64_t height, int64_t width) {
  Image image{width, height, channels, std::vector<uint8_t>(size_t(channels * height * width))};
  const int64_t plane = height * width;
  for (int64_t p = 0; p < plane; ++p) {
    for (int64_t c = 0; c < channels; ++c) image.pixels[size_t(p * channels + c)] = chw[c * plane + p];
  }
  return image;
}

void image_to_chw(const Image& image, uint8_t* chw) {
  const int64_t plane = image.height * image.width;
  for (int64_t p = 0; p < plane; ++p) {
    for (int64_t c = 0; c < image.channels; ++c) chw[c * plane + p] = image.pixels[size_t(p * image.channels + c)];
  }
}

// Under a temporary name, renamed when complete: a full disk or a crash never leaves a cut PNG.
void write_png(const std::string& path, const Image& image) {
  const std::vector<uint8_t> bytes = encode_png(image);
  write_file_atomically(path, bytes.data(), bytes.size());
}

Image read_png(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return decode_png(bytes.data(), bytes.size(), path);
}

Image decode_image(const uint8_t* data, size_t size, const std::string& name) {
  if (size >= 8 && png_sig_cmp(data, 0, 8) == 0) return decode_png(data, size, name);
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return decode_jpeg(data, size, name);
  SG2_FAIL("'{}' is neither a PNG nor a JPEG image", name);
}

at::Tensor to_uint8(const at::Tensor& images, double lo, double hi) {
  return ((images.detach().to(at::kFloat) - lo) * (255.0 / (hi - lo))).round().clamp(0, 255).to(at::kByte);
}

Image tile_grid(const at::Tensor& images_uint8, int64_t grid_w, int64_t grid_h) {
  SG2_CHECK(images_uint8.dim() == 4 && images_uint8.size(0) == grid_w * grid_h,
            "image grid {}x{} needs {} images of [C, H, W], got {}", grid_w, grid_h, grid_w * grid_h,
            images_uint8.sizes());
  const int64_t c = images_uint8.size(1), h = images_uint8.size(2), w = images_uint8.size(3);
  // [gh, gw, C, H, W] -> [gh, H, gw, W, C]
  at::Tensor grid = images_uint8.cpu().reshape({grid_h, grid_w, c, h, w}).permute({0, 3, 1, 4, 2}).contiguous();
  Image image;
  image.width = grid_w * w;
  image.height = grid_h * h;
  image.channels = c;
  image.pixels.assign(grid.data_ptr<uint8_t>(), grid.data_ptr<uint8_t>() + grid.numel());
  return image;
}

std::pair<int64_t, int64_t> default_grid_size(int64_t height, int64_t width) {
  return {std::clamp<int64_t>(7680 / width, 7, 32), std::clamp<int64_t>(4320 / height, 4, 32)};
}

}  // namespace sg2::data
