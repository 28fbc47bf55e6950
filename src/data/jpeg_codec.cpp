// JPEG decoding through libjpeg-turbo, for `stylegan2_dataset create` from folders of photographs.
#include "sg2/core/error.h"
#include "sg2/data/image_io.h"

#include <csetjmp>
#include <cstdio>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

namespace sg2::data {

namespace {

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr info) {
  auto* error = reinterpret_cast<JpegError*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

void on_jpeg_message(j_common_ptr, int) {}  // warnings (corrupt but decodable data) are tolerated

}  // namespace

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name) {
  jpeg_decompress_struct info{};
  JpegError error{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_jpeg_error;
  error.manager.emit_message = on_jpeg_message;
  Image image;
  if (setjmp(error.jump)) {
    jpeg_destroy_decompress(&info);
    SG2_FAIL("reading JPEG '{}' failed: {}", name, error.message);
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, data, static_cast<unsigned long>(size));
  jpeg_read_header(&info, TRUE);
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {  // libjpeg gives no RGB of these
    jpeg_destroy_decompress(&info);
    SG2_FAIL("JPEG '{}' is CMYK: convert it to RGB or grayscale first", name);
  }
  // Grayscale stays gray; YCbCr and RGB decode to RGB.
  info.out_color_space = info.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  if (info.image_width > kMaxDecodedSide || info.image_height > kMaxDecodedSide) {
    jpeg_destroy_decompress(&info);
    SG2_FAIL("JPEG '{}' is {}x{}, larger than the limit of {} pixels per side", name, info.image_width,
             info.image_height, kMaxDecodedSide);
  }
  jpeg_start_decompress(&info);
  image.width = info.output_width;
  image.height = info.output_height;
  image.channels = info.output_components;
  image.pixels.resize(static_cast<size_t>(image.width * image.height * image.channels));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = image.pixels.data() + int64_t(info.output_scanline) * image.width * image.channels;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return image;
}

}  // namespace sg2::data
