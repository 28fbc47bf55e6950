#pragma once
// Dataset directories of the original StyleGAN2 (docs/architecture.md, "File formats"): `<name>-rNN.tfrecords`, one
// file per level NN = 02 .. log2(resolution), each record a tf.train.Example image, and optionally
// `<name>-rxx.labels` (.npy float32 [N, label_size]) matched to records by index. Training reads
// only the full-resolution level; records are found through an index of offsets (see tfrecord.h).

#include "sg2/data/dataset.h"
#include "sg2/data/tfrecord.h"

#include <map>
#include <memory>

namespace sg2::data {

struct TFRecordLayout {
  std::string directory, name;
  std::map<int, std::string> levels;  // log2(resolution) -> file
  std::string labels;                 // empty when there is none
  int max_level() const { return levels.empty() ? 0 : levels.rbegin()->first; }
  std::vector<int> missing_levels() const;  // gaps in 2 .. max_level()
};

// Lists the levels in `directory`; errors when there are none or several dataset names.
TFRecordLayout find_tfrecord_layout(const std::string& directory);

class TFRecordDataset : public Dataset {
 public:
  // level_resolution: the level to read (0: the full resolution).
  TFRecordDataset(const std::string& directory, bool use_labels, int64_t max_images, int64_t level_resolution = 0);

  std::string name() const override { return layout_.name; }
  int64_t size() const override { return count_; }
  ImageShape shape() const override { return shape_; }
  int64_t label_dim() const override { return use_labels_ ? labels_cols_ : 0; }
  void read_image(int64_t index, uint8_t* out) const override;
  void read_label(int64_t index, float* out) const override;

  const TFRecordLayout& layout() const { return layout_; }
  const TFRecordFile& file() const { return *file_; }
  int64_t record_count() const { return static_cast<int64_t>(spans_.size()); }
  int64_t available_label_dim() const { return labels_cols_; }

  static bool looks_like(const std::string& directory);

 private:
  void check_record_count_against_another_level(int level) const;

  TFRecordLayout layout_;
  std::unique_ptr<TFRecordFile> file_;
  std::vector<RecordSpan> spans_;
  int64_t count_ = 0;
  ImageShape shape_;
  bool use_labels_;
  int64_t labels_cols_ = 0;
  std::vector<float> labels_;
};

}  // namespace sg2::data
