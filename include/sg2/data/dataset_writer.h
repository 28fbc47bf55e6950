#pragma once
// Writing datasets the way the original tools do.
//
// TFRecord directories (NVlabs/stylegan2 dataset_tool.py): `<dir>/<name>-rNN.tfrecords` for every
// level from the full resolution down to 4x4, where `name` is the directory's base name. Level k-1 is
// the 2x2 box average of level k computed in float32 from the unquantised level k (as the original
// chains it), each level rounded half-to-even and clipped to uint8. Images go in the order of
// numpy.random.RandomState(123).shuffle(arange(N)) when shuffled; labels go to `<name>-rxx.labels`.
//
// ZIP datasets (stylegan2-ada-pytorch dataset_tool.py): `NNNNN/imgNNNNNNNN.png` entries, 1000 per
// folder, uncompressed, with dataset.json labels (class indices for one-hot labels, vectors otherwise).

#include "sg2/data/dataset.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sg2::data {

struct WriteOptions {
  bool shuffle = true;     // TFRecords: the original's seeded shuffle
  bool labels = true;      // write the source's labels when it has them
  int workers = 2;         // threads reading and encoding
  std::function<void(int64_t done, int64_t total)> progress;  // optional
};

// The original's shuffled order: numpy.random.RandomState(123) shuffling arange(count).
std::vector<int64_t> stylegan2_shuffled_order(int64_t count);

// 2x2 box average in float32 (a + b + c + d) * 0.25 of an image [C, H, W] -> [C, H/2, W/2].
std::vector<float> box_downsample(const std::vector<float>& image, int64_t channels, int64_t side);
// Round half to even and clip to [0, 255], like numpy's rint(...).clip(0, 255).astype(uint8).
std::vector<uint8_t> quantize(const std::vector<float>& image);

// `source` must expose labels (label_dim() > 0) for them to be written.
void write_tfrecord_dataset(const Dataset& source, const std::string& directory, const WriteOptions& options);
void write_zip_dataset(const Dataset& source, const std::string& zip_path, const WriteOptions& options);

}  // namespace sg2::data
