#pragma once
// The data options a training config holds (train/config.h's data.*): which dataset to open and how
// far the loader decodes ahead. Plain values, so a config can hold them without the readers.

#include <cstdint>
#include <string>

namespace sg2::data {

struct DatasetOptions {
  std::string path;              // directory or file of the dataset
  std::string split = "train";   // Fashion-MNIST: train, test or all
  bool use_labels = false;       // expose class labels (conditional training)
  std::string labels_for = "data.use_labels is true";  // why labels are needed: the error's lead where none exist
  int64_t max_images = 0;        // 0: all
  int64_t resolution = 0;        // expected resolution; 0: whatever the data has
  int64_t channels = 0;          // expected channels; 0: whatever the data has
};

struct PrefetchOptions {
  int workers = 2;   // 0: load in the calling thread
  int prefetch = 4;  // batches buffered ahead
};

}  // namespace sg2::data
