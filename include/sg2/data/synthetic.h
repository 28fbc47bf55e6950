#pragma once
// Generated images for benchmarks and shape tests where no dataset of the needed resolution exists
// (data.path: synthetic): smooth seeded patterns with an optional class label, decoded on demand.

#include "sg2/data/dataset.h"

namespace sg2::data {

class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(int64_t size, int64_t resolution, int64_t channels, int64_t label_dim);

  std::string name() const override { return "synthetic"; }
  int64_t size() const override { return size_; }
  ImageShape shape() const override { return {channels_, resolution_, resolution_}; }
  int64_t label_dim() const override { return label_dim_; }
  void read_image(int64_t index, uint8_t* out) const override;
  void read_label(int64_t index, float* out) const override;

 private:
  int64_t size_, resolution_, channels_, label_dim_;
};

}  // namespace sg2::data
