#include "sg2/data/image_archive_dataset.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/data/zip_archive.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

namespace sg2::data {

namespace fs = std::filesystem;

namespace {

bool is_image_name(const std::string& name) {
  std::string ext = fs::path(name).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

std::vector<std::string> folder_image_names(const std::string& root) {
  std::vector<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && is_image_name(entry.path().string())) {
      names.push_back(fs::relative(entry.path(), root).generic_string());
    }
  }
  return names;
}

std::string dataset_stem(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.stem().string();
}

}  // namespace

ImageFiles::ImageFiles(const std::string& path) : path_(path) {
  if (ZipReader::looks_like(path)) {
    zip_ = std::make_unique<ZipReader>(path);
    for (const ZipEntry& entry : zip_->entries()) {
      if (is_image_name(entry.name)) names_.push_back(entry.name);
    }
  } else {
    SG2_CHECK(fs::is_directory(path), "'{}' is neither a ZIP archive nor a folder of images", path);
    names_ = folder_image_names(path);
  }
  std::sort(names_.begin(), names_.end());
  SG2_CHECK(!names_.empty(), "'{}' holds no PNG or JPEG images", path);
}

ImageFiles::~ImageFiles() = default;

bool ImageFiles::looks_like(const std::string& path) {
  if (ZipReader::looks_like(path)) return true;
  std::error_code error;
  if (!fs::is_directory(path, error)) return false;
  for (const auto& entry : fs::recursive_directory_iterator(path, error)) {
    if (entry.is_regular_file() && is_image_name(entry.path().string())) return true;
  }
  return false;
}

bool ImageFiles::has_file(const std::string& name) const {
  return zip_ ? zip_->find(name) != nullptr : fs::is_regular_file(fs::path(path_) / name);
}

std::vector<uint8_t> ImageFiles::read_file(const std::string& name) const {
  if (!zip_) return read_file_bytes((fs::path(path_) / name).string());
  const ZipEntry* entry = zip_->find(name);
  SG2_CHECK(entry != nullptr, "'{}' has no entry '{}'", path_, name);
  return zip_->read(*entry);
}

std::vector<uint8_t> ImageFiles::read(int64_t index) const { return read_file(names_.at(size_t(index))); }

// ---- the dataset ----------------------------------------------------------------------------------

ImageArchiveDataset::ImageArchiveDataset(const std::string& path, bool use_labels, int64_t max_images,
                                         ImageTransform transform)
    : files_(path), name_(dataset_stem(path)), transform_(transform), use_labels_(use_labels) {
  count_ = static_cast<int64_t>(files_.names().size());
  if (max_images > 0) count_ = std::min(count_, max_images);
  const Image first = decode(0);
  shape_ = {first.channels, first.height, first.width};
  if (use_labels) {
    load_labels();
  } else {
    try {  // only to report whether labels exist (available_label_dim); unused labels are not checked
      load_labels();
    } catch (const Error& e) {
      labels_ = {};
      label_error_ = without_location(e.what());
    }
  }
}

Image ImageArchiveDataset::decode(int64_t index) const {
  const std::string& name = files_.names().at(size_t(index));
  const std::vector<uint8_t> bytes = files_.read(index);
  Image image = decode_image(bytes.data(), bytes.size(), files_.path() + "/" + name);
  if (transform_.active()) image = apply_transform(image, transform_);
  return image;
}

void ImageArchiveDataset::read_image(int64_t index, uint8_t* out) const {
  const Image image = decode(index);
  const bool same_size = image.height == shape_.height && image.width == shape_.width;
  const bool same_channels = image.channels == shape_.channels;
  SG2_CHECK(same_size && same_channels,
            "'{}/{}' is {}x{} with {} but the dataset's first image is {}x{} with {}; all images must match "
            "(stylegan2_dataset create {})",
            files_.path(), files_.names()[size_t(index)], image.width, image.height, counted(image.channels, "channel"),
            shape_.width, shape_.height, counted(shape_.channels, "channel"),
            same_size ? "--channels 1 or 3 converts them" : same_channels ? "--resolution R resizes them"
                                                          : "--resolution R --channels 1 or 3 converts them");
  image_to_chw(image, out);
}

void ImageArchiveDataset::read_label(int64_t index, float* out) const {
  if (!use_labels_) return;
  std::copy_n(labels_.values.begin() + index * labels_.cols, labels_.cols, out);
}

// One-hot labels of more classes than this would take more memory than the images.
constexpr int64_t kMaxClasses = 1 << 20;

void ImageArchiveDataset::load_labels() {
  if (!files_.has_file("dataset.json")) return;
  const std::vector<uint8_t> bytes = files_.read_file("dataset.json");
  const std::string where = files_.path() + "/dataset.json";
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    SG2_FAIL("'{}' is not valid JSON: {}", where, e.what());
  }
  if (!json.contains("labels") || json["labels"].is_null()) return;
  SG2_CHECK(json["labels"].is_array(), "'{}': \"labels\" must be a list of [file, label] pairs", where);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& pair : json["labels"]) {
    SG2_CHECK(pair.is_array() && pair.size() == 2 && pair[0].is_string(),
              "'{}': every label must be a [file, label] pair, found {}", where, pair.dump());
    by_name[pair[0].get<std::string>()] = pair[1];
  }
  // Every image has a label, and the label size is the whole archive's, as in stylegan2-ada-pytorch:
  // data.max_images keeps the first images but not fewer classes.
  std::vector<nlohmann::json> labels;
  for (const std::string& name : files_.names()) {
    const auto it = by_name.find(name);
    SG2_CHECK(it != by_name.end(), "'{}' has no label for '{}'", where, name);
    labels.push_back(it->second);
  }
  const bool classes = std::all_of(labels.begin(), labels.end(), [](const auto& l) { return l.is_number_integer(); });
  if (classes) {
    int64_t max_class = 0;
    for (const auto& l : labels) {
      SG2_CHECK(l.template get<int64_t>() >= 0 && l.template get<int64_t>() < kMaxClasses,
                "'{}': class {} is outside 0 to {} (a class index, one-hot encoded)", where, l.dump(), kMaxClasses - 1);
      max_class = std::max(max_class, l.template get<int64_t>());
    }
    labels_.cols = max_class + 1;
    labels_.values.assign(size_t(count_ * labels_.cols), 0.0f);
    for (int64_t i = 0; i < count_; ++i) labels_.values[size_t(i * labels_.cols + labels[size_t(i)].get<int64_t>())] = 1;
    return;
  }
  labels_.cols = labels[0].is_array() ? int64_t(labels[0].size()) : 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto& l = labels[i];
    SG2_CHECK(l.is_array() && int64_t(l.size()) == labels_.cols,
              "'{}': the label of '{}' is {}, expected a class index or a list of {} numbers", where,
              files_.names()[i], l.dump(), labels_.cols);
    for (const auto& v : l) {
      SG2_CHECK(v.is_number(), "'{}': the label of '{}' holds a non-number", where, files_.names()[i]);
      if (int64_t(i) < count_) labels_.values.push_back(v.get<float>());
    }
  }
}

}  // namespace sg2::data
