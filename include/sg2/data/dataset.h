#pragma once
// The dataset interface every source implements (TFRecord directories, stylegan2-ada ZIP/folder
// datasets, Fashion-MNIST IDX files, synthetic images). Images are uint8 [C, H, W]; labels are
// float [label_dim] (0 when the dataset is used unconditionally). Reads must be thread-safe.

#include "sg2/data/options.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sg2::data {

struct ImageShape {
  int64_t channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t bytes() const { return channels * height * width; }
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::string name() const = 0;  // short name for run directories and messages
  virtual int64_t size() const = 0;
  virtual ImageShape shape() const = 0;
  virtual int64_t label_dim() const = 0;
  virtual void read_image(int64_t index, uint8_t* out) const = 0;  // out: shape().bytes() bytes, CHW
  virtual void read_label(int64_t index, float* out) const = 0;    // out: label_dim() floats
  // Which part of the source at the path this dataset reads, where the path alone does not say
  // (Fashion-MNIST: its split); empty where it reads the whole source.
  virtual std::string subset() const { return ""; }

  int64_t resolution() const;  // side of the square images; errors for non-square ones
};

constexpr const char* kSyntheticPath = "synthetic";

// Opens the dataset at options.path, choosing the reader by what is there.
std::shared_ptr<Dataset> open_dataset(const DatasetOptions& options);

}  // namespace sg2::data
