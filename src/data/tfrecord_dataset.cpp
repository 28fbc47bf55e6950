#include "sg2/data/tfrecord_dataset.h"

#include "sg2/core/error.h"
#include "sg2/core/logging.h"
#include "sg2/data/example.h"
#include "sg2/data/npy.h"

#include <cstring>
#include <filesystem>
#include <regex>

namespace sg2::data {

namespace fs = std::filesystem;

std::vector<int> TFRecordLayout::missing_levels() const {
  std::vector<int> missing;
  for (int level = 2; level < max_level(); ++level) {
    if (!levels.count(level)) missing.push_back(level);
  }
  return missing;
}

TFRecordLayout find_tfrecord_layout(const std::string& directory) {
  SG2_CHECK(fs::is_directory(directory), "'{}' is not a directory", directory);
  TFRecordLayout layout;
  layout.directory = directory;
  const std::regex level_file(R"((.+)-r(\d\d)\.tfrecords)");
  const std::regex labels_file(R"((.+)-rxx\.labels)");
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string file = entry.path().filename().string();
    std::smatch match;
    if (std::regex_match(file, match, level_file)) {
      SG2_CHECK(layout.name.empty() || layout.name == match[1].str(),
                "'{}' holds TFRecord files of two datasets ('{}' and '{}'); keep one per directory", directory,
                layout.name, match[1].str());
      layout.name = match[1].str();
      layout.levels[std::stoi(match[2].str())] = entry.path().string();
    } else if (std::regex_match(file, match, labels_file)) {
      layout.labels = entry.path().string();
    }
  }
  SG2_CHECK(!layout.levels.empty(), "'{}' has no <name>-rNN.tfrecords files", directory);
  return layout;
}

bool TFRecordDataset::looks_like(const std::string& directory) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) return false;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    if (entry.path().extension() == ".tfrecords") return true;
  }
  return false;
}

TFRecordDataset::TFRecordDataset(const std::string& directory, bool use_labels, int64_t max_images,
                                 int64_t level_resolution)
    : layout_(find_tfrecord_layout(directory)), use_labels_(use_labels) {
  int level = layout_.max_level();
  if (level_resolution > 0) {
    level = 0;
    while ((int64_t(1) << level) < level_resolution) ++level;
    SG2_CHECK((int64_t(1) << level) == level_resolution && layout_.levels.count(level),
              "'{}' has no level for resolution {} (no {}-r{:02d}.tfrecords; it has levels up to {}x{})", directory,
              level_resolution, layout_.name, level, 1 << layout_.max_level(), 1 << layout_.max_level());
  }
  const std::vector<int> missing = layout_.missing_levels();
  if (!missing.empty()) {
    spdlog::warn("'{}': levels {} are missing (only r{:02d} is read)", directory, missing, level);
  }
  file_ = std::make_unique<TFRecordFile>(layout_.levels.at(level));
  spans_ = load_record_index(*file_);
  SG2_CHECK(!spans_.empty(), "'{}' holds no records", file_->path());
  check_record_count_against_another_level(level);
  count_ = max_images > 0 ? std::min<int64_t>(max_images, record_count()) : record_count();

  std::vector<uint8_t> payload;
  file_->read(0, spans_[0], payload);
  const ImageRecord first = decode_image_example(payload.data(), payload.size(),
                                                 fmt::format("'{}': record 0", file_->path()));
  shape_ = {first.channels, first.height, first.width};
  SG2_CHECK(first.height == (int64_t(1) << level) && first.width == first.height,
            "'{}': a level-{} file should hold {}x{} images, record 0 is {}x{}", file_->path(), level, 1 << level,
            1 << level, first.width, first.height);

  if (!layout_.labels.empty()) {
    FloatMatrix labels = read_npy_float32(layout_.labels);
    SG2_CHECK(labels.rows == record_count(), "'{}' has {} labels but '{}' has {} records; they must match one to one",
              layout_.labels, labels.rows, file_->path(), record_count());
    labels_cols_ = labels.cols;
    labels_ = std::move(labels.values);
  }
}

// Every level holds every image, so a file cut at a record boundary (which reads as valid) shows as a
// count that differs from the other levels'. Compares with the smallest level (cheapest to index), or
// the largest when the smallest is the one read.
void TFRecordDataset::check_record_count_against_another_level(int level) const {
  const auto other = level == layout_.levels.begin()->first ? std::prev(layout_.levels.end()) : layout_.levels.begin();
  if (other->first == level) return;
  const int64_t other_count = static_cast<int64_t>(load_record_index(TFRecordFile(other->second)).size());
  SG2_CHECK(other_count == record_count(),
            "'{}' has {} records but '{}' has {}; every level holds every image, so one of them is cut short (an "
            "interrupted copy?); 'stylegan2_dataset info {}' checks every level",
            file_->path(), record_count(), other->second, other_count, layout_.directory);
}

void TFRecordDataset::read_image(int64_t index, uint8_t* out) const {
  thread_local std::vector<uint8_t> payload;
  const RecordSpan& span = spans_.at(size_t(index));
  file_->read(index, span, payload);
  const std::string where = fmt::format("'{}': record {} at byte offset {}", file_->path(), index, span.offset);
  const ImageRecord image = decode_image_example(payload.data(), payload.size(), where);
  SG2_CHECK(image.channels == shape_.channels && image.height == shape_.height && image.width == shape_.width,
            "{}: shape [{}, {}, {}] differs from record 0's [{}, {}, {}]", where, image.channels, image.height,
            image.width, shape_.channels, shape_.height, shape_.width);
  std::memcpy(out, image.pixels.data(), image.pixels.size());
}

void TFRecordDataset::read_label(int64_t index, float* out) const {
  if (!use_labels_) return;
  std::copy_n(labels_.begin() + index * labels_cols_, labels_cols_, out);
}

}  // namespace sg2::data
