#include "sg2/data/fashion_mnist.h"

#include "sg2/core/error.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

namespace sg2::data {

namespace fs = std::filesystem;

namespace {

// Reads all bytes of a file through zlib, which also passes plain (uncompressed) files through.
std::vector<uint8_t> read_maybe_gzipped(const std::string& path) {
  std::unique_ptr<gzFile_s, decltype(&gzclose)> file(gzopen(path.c_str(), "rb"), &gzclose);
  SG2_CHECK(file != nullptr, "cannot open '{}'", path);
  std::vector<uint8_t> bytes;
  std::vector<uint8_t> chunk(1 << 20);
  for (;;) {
    const int n = gzread(file.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int code = 0;
      SG2_FAIL("'{}': corrupt or truncated gzip data ({})", path, gzerror(file.get(), &code));
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  int code = Z_OK;
  const char* message = gzerror(file.get(), &code);
  SG2_CHECK(code == Z_OK || code == Z_STREAM_END, "'{}': corrupt or truncated gzip data ({})", path, message);
  return bytes;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string find_file(const std::string& directory, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    const fs::path candidate = fs::path(directory) / (stem + suffix);
    if (fs::exists(candidate)) return candidate.string();
  }
  SG2_FAIL("'{}': no {} or {}.gz (Debian: apt-get install dataset-fashion-mnist)", directory, stem, stem);
}

}  // namespace

IdxArray read_idx_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_maybe_gzipped(path);
  SG2_CHECK(bytes.size() >= 4, "'{}': {} bytes is too short for an IDX header", path, bytes.size());
  SG2_CHECK(bytes[0] == 0 && bytes[1] == 0, "'{}': bad IDX magic (expected two zero bytes)", path);
  SG2_CHECK(bytes[2] == 0x08, "'{}': IDX element type 0x{:02x}, expected 0x08 (unsigned byte)", path, bytes[2]);
  const size_t ndims = bytes[3];
  SG2_CHECK(ndims >= 1 && ndims <= 4, "'{}': IDX with {} dimensions, expected 1 to 4", path, ndims);
  SG2_CHECK(bytes.size() >= 4 + 4 * ndims, "'{}': truncated IDX header", path);
  IdxArray array;
  size_t count = 1;
  for (size_t i = 0; i < ndims; ++i) {
    array.dims.push_back(big_endian_u32(&bytes[4 + 4 * i]));
    count *= static_cast<size_t>(array.dims.back());
  }
  const size_t offset = 4 + 4 * ndims;
  SG2_CHECK(bytes.size() - offset == count, "'{}': header promises {} bytes of data, file has {}", path, count,
            bytes.size() - offset);
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(offset), bytes.end());
  return array;
}

bool FashionMnistDataset::looks_like(const std::string& directory) {
  return fs::exists(fs::path(directory) / "train-images-idx3-ubyte.gz") ||
         fs::exists(fs::path(directory) / "train-images-idx3-ubyte");
}

FashionMnistDataset::FashionMnistDataset(const std::string& directory, const std::string& split, bool use_labels,
                                         int64_t max_images)
    : split_(split), use_labels_(use_labels) {
  SG2_CHECK(split == "train" || split == "test" || split == "all",
            "Fashion-MNIST split '{}': expected train, test or all", split);
  if (split == "train" || split == "all") load_split(directory, "train");
  if (split == "test" || split == "all") load_split(directory, "t10k");
  if (max_images > 0 && max_images < size()) {
    classes_.resize(static_cast<size_t>(max_images));
    pixels_.resize(static_cast<size_t>(max_images * side_ * side_));
  }
  padded_side_ = 4;
  while (padded_side_ < side_) padded_side_ *= 2;
}

void FashionMnistDataset::load_split(const std::string& directory, const std::string& prefix) {
  const std::string images_path = find_file(directory, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(directory, prefix + "-labels-idx1-ubyte");
  IdxArray images = read_idx_file(images_path);
  IdxArray labels = read_idx_file(labels_path);
  SG2_CHECK(images.dims.size() == 3 && images.dims[1] == images.dims[2], "'{}': expected [N, H, H] images, got {} dims",
            images_path, images.dims.size());
  SG2_CHECK(labels.dims.size() == 1 && labels.dims[0] == images.dims[0],
            "'{}': {} labels for {} images in '{}'", labels_path, labels.dims.empty() ? 0 : labels.dims[0],
            images.dims[0], images_path);
  SG2_CHECK(pixels_.empty() || images.dims[1] == side_, "'{}': image size {} differs from the other split's {}",
            images_path, images.dims[1], side_);
  for (uint8_t c : labels.data) SG2_CHECK(c < 10, "'{}': class {} out of range 0-9", labels_path, int{c});
  side_ = images.dims[1];
  pixels_.insert(pixels_.end(), images.data.begin(), images.data.end());
  classes_.insert(classes_.end(), labels.data.begin(), labels.data.end());
}

void FashionMnistDataset::read_image(int64_t index, uint8_t* out) const {
  SG2_CHECK(index >= 0 && index < size(), "Fashion-MNIST image index {} out of range [0, {})", index, size());
  const int64_t pad = (padded_side_ - side_) / 2;
  std::memset(out, 0, static_cast<size_t>(padded_side_ * padded_side_));
  const uint8_t* src = pixels_.data() + index * side_ * side_;
  for (int64_t y = 0; y < side_; ++y) {
    std::memcpy(out + (y + pad) * padded_side_ + pad, src + y * side_, static_cast<size_t>(side_));
  }
}

void FashionMnistDataset::read_label(int64_t index, float* out) const {
  if (!use_labels_) return;
  std::fill(out, out + 10, 0.0f);
  out[class_of(index)] = 1.0f;
}

}  // namespace sg2::data
