#include "sg2/data/dataset.h"

#include "sg2/core/error.h"
#include "sg2/data/fashion_mnist.h"
#include "sg2/data/image_archive_dataset.h"
#include "sg2/data/tfrecord_dataset.h"
#include "sg2/data/synthetic.h"

#include <filesystem>

namespace sg2::data {

int64_t Dataset::resolution() const {
  const ImageShape s = shape();
  SG2_CHECK(s.height == s.width, "dataset '{}' has non-square images ({}x{}, width x height); resize them "
            "(stylegan2_dataset create --resolution R)", name(), s.width, s.height);
  return s.height;
}

std::shared_ptr<Dataset> open_dataset(const DatasetOptions& options) {
  const std::string& path = options.path;
  SG2_CHECK(!path.empty(),
            "data.path is empty: point it at a dataset with --data (e.g. {}; a snapshot from stylegan2_import "
            "records no training data)",
            kFashionMnistDir);
  if (path == kSyntheticPath) {
    SG2_CHECK(options.resolution > 0, "data.path = synthetic needs data.resolution");
    const int64_t count = options.max_images > 0 ? options.max_images : 4096;
    return std::make_shared<SyntheticDataset>(count, options.resolution, options.channels > 0 ? options.channels : 3,
                                              options.use_labels ? 10 : 0);
  }
  SG2_CHECK(std::filesystem::exists(path), "data.path '{}' does not exist", path);
  SG2_CHECK(options.split == "train" || FashionMnistDataset::looks_like(path),
            "data.split = {}: only the Fashion-MNIST IDX files have splits; '{}' is read whole (leave data.split "
            "at train)", options.split, path);
  std::shared_ptr<Dataset> dataset;
  if (TFRecordDataset::looks_like(path)) {
    dataset = std::make_shared<TFRecordDataset>(path, options.use_labels, options.max_images);
  } else if (FashionMnistDataset::looks_like(path)) {
    dataset = std::make_shared<FashionMnistDataset>(path, options.split, options.use_labels, options.max_images);
  } else if (ImageFiles::looks_like(path)) {
    dataset = std::make_shared<ImageArchiveDataset>(path, options.use_labels, options.max_images);
  }
  SG2_CHECK(dataset != nullptr,
            "data.path '{}': no dataset format recognised (expected a directory of <name>-rNN.tfrecords files, a "
            "stylegan2-ada ZIP or folder of PNG/JPEG images, or the Fashion-MNIST IDX files)",
            path);
  SG2_CHECK(dataset->size() > 0, "data.path '{}': the dataset is empty", path);
  SG2_CHECK(!options.use_labels || dataset->label_dim() > 0, "{}: '{}' has no class labels (a ZIP or image folder "
            "keeps them in dataset.json's \"labels\", TFRecords in <name>-rxx.labels)", options.labels_for, path);
  SG2_CHECK(options.resolution == 0 || dataset->resolution() == options.resolution,
            "data.resolution = {} but the dataset at '{}' has {}x{} images", options.resolution, path,
            dataset->resolution(), dataset->resolution());
  SG2_CHECK(options.channels == 0 || dataset->shape().channels == options.channels,
            "data.channels = {} but the dataset at '{}' has {}-channel images", options.channels, path,
            dataset->shape().channels);
  return dataset;
}

}  // namespace sg2::data
