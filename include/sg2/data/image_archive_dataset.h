#pragma once
// stylegan2-ada-pytorch datasets (docs/architecture.md, "File formats"): an uncompressed ZIP or a folder of images
// (PNG or JPEG), files sorted by relative path as its ImageFolderDataset sorts them, and optional
// labels in `dataset.json` ({"labels": [[relative_path, class_or_vector], ...]}; integer classes
// become one-hot vectors of max+1 entries, as there). Without a transform all images must share one
// shape; with one (stylegan2_dataset create) they are cropped, resized and converted first.

#include "sg2/data/dataset.h"
#include "sg2/data/image_io.h"
#include "sg2/data/image_transform.h"

#include <memory>

namespace sg2::data {

class ZipReader;

// The image files of a folder or ZIP archive and their raw bytes.
class ImageFiles {
 public:
  explicit ImageFiles(const std::string& path);
  ~ImageFiles();
  const std::string& path() const { return path_; }
  const std::vector<std::string>& names() const { return names_; }  // sorted relative paths
  std::vector<uint8_t> read(int64_t index) const;
  bool has_file(const std::string& name) const;
  std::vector<uint8_t> read_file(const std::string& name) const;  // any file, e.g. dataset.json

  static bool looks_like(const std::string& path);  // a ZIP file, or a folder holding images

 private:
  std::string path_;
  std::unique_ptr<ZipReader> zip_;  // null for folders
  std::vector<std::string> names_;
};

class ImageArchiveDataset : public Dataset {
 public:
  ImageArchiveDataset(const std::string& path, bool use_labels, int64_t max_images, ImageTransform transform = {});

  std::string name() const override { return name_; }
  int64_t size() const override { return count_; }
  ImageShape shape() const override { return shape_; }
  int64_t label_dim() const override { return use_labels_ ? labels_.cols : 0; }
  void read_image(int64_t index, uint8_t* out) const override;
  void read_label(int64_t index, float* out) const override;
  int64_t available_label_dim() const { return labels_.cols; }
  // Why dataset.json's labels do not read (a dataset opened without labels keeps going); "" if they do.
  const std::string& label_error() const { return label_error_; }

 private:
  Image decode(int64_t index) const;
  void load_labels();

  ImageFiles files_;
  std::string name_;
  ImageTransform transform_;
  int64_t count_ = 0;
  ImageShape shape_;
  bool use_labels_;
  std::string label_error_;
  struct {
    int64_t cols = 0;
    std::vector<float> values;
  } labels_;
};

}  // namespace sg2::data
