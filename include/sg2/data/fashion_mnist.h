#pragma once
// Fashion-MNIST from its IDX files (gzip or plain), as Debian's dataset-fashion-mnist installs them
// in /usr/share/datasets/fashion-mnist: 60,000 train + 10,000 test images of 28x28, 10 classes.
// Images are zero-padded to the next power of two (32x32) so the networks can use them.

#include "sg2/data/dataset.h"

namespace sg2::data {

constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

class FashionMnistDataset : public Dataset {
 public:
  FashionMnistDataset(const std::string& directory, const std::string& split, bool use_labels, int64_t max_images);

  std::string name() const override { return "fashion-mnist"; }
  std::string subset() const override { return split_; }
  int64_t size() const override { return static_cast<int64_t>(classes_.size()); }
  ImageShape shape() const override { return {1, padded_side_, padded_side_}; }
  int64_t label_dim() const override { return use_labels_ ? 10 : 0; }
  void read_image(int64_t index, uint8_t* out) const override;
  void read_label(int64_t index, float* out) const override;

  int class_of(int64_t index) const { return classes_.at(static_cast<size_t>(index)); }

  // True if `directory` holds the Fashion-MNIST IDX files.
  static bool looks_like(const std::string& directory);

 private:
  void load_split(const std::string& directory, const std::string& prefix);

  std::vector<uint8_t> pixels_;  // [N, 28, 28] as stored
  std::vector<uint8_t> classes_;
  int64_t side_ = 28;
  int64_t padded_side_ = 32;
  std::string split_;
  bool use_labels_;
};

// Reads an IDX file (optionally gzip-compressed); returns its dimensions and raw uint8 payload.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
IdxArray read_idx_file(const std::string& path);

}  // namespace sg2::data
