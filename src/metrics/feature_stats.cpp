#include "sg2/metrics/feature_stats.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/data/atomic_file.h"
#include "sg2/nn/state_dict.h"

#include <ATen/core/Dict.h>
#include <spdlog/spdlog.h>
#include <torch/serialize.h>

#include <filesystem>

namespace sg2::metrics {

namespace {

constexpr const char* kCacheFormat = "stylegan2-cpp-feature-stats";
constexpr int64_t kCacheVersion = 1;

using Dict = c10::Dict<c10::IValue, c10::IValue>;

}  // namespace

FeatureStats::FeatureStats(int64_t max_items, bool capture_all, bool capture_mean_cov)
    : max_items_(max_items), capture_all_(capture_all), capture_mean_cov_(capture_mean_cov) {
  SG2_CHECK(max_items > 0, "feature statistics need max_items > 0, got {}", max_items);
}

void FeatureStats::check_dim(const at::Tensor& features) const {
  SG2_CHECK(features.dim() == 2, "features must be [N, D], got {}", features.sizes());
  SG2_CHECK(dim_ < 0 || features.size(1) == dim_, "features have {} dimensions, earlier ones {}", features.size(1),
            dim_);
  SG2_CHECK(features.is_floating_point(), "features must be floating point, got {}", c10::toString(features.scalar_type()));
}

void FeatureStats::append(const at::Tensor& features) {
  check_dim(features);
  const int64_t take = std::min(features.size(0), max_items_ - count_);
  if (take <= 0) return;
  const at::Tensor x = features.narrow(0, 0, take).detach();
  if (dim_ < 0) {
    dim_ = x.size(1);
    const auto options = x.options().dtype(at::kDouble);
    if (capture_mean_cov_) {
      raw_sum_ = at::zeros({dim_}, options);
      raw_outer_ = at::zeros({dim_, dim_}, options);
    }
  }
  if (capture_mean_cov_) {
    const at::Tensor x64 = x.to(raw_sum_.device(), at::kDouble);  // [n, D]
    raw_sum_ += x64.sum(0);
    raw_outer_.addmm_(x64.transpose(0, 1), x64);
  }
  if (capture_all_) chunks_.push_back(x.to(at::kCPU, at::kFloat).contiguous());
  count_ += take;
}

at::Tensor FeatureStats::all() const {
  SG2_CHECK(capture_all_, "these feature statistics keep no individual features");
  SG2_CHECK(!chunks_.empty(), "no features were appended");
  return at::cat(chunks_);
}

at::Tensor FeatureStats::mean() const {
  SG2_CHECK(capture_mean_cov_ && count_ > 0, "no mean: capture_mean_cov {} with {} features", capture_mean_cov_,
            count_);
  return (raw_sum_ / static_cast<double>(count_)).cpu();
}

at::Tensor FeatureStats::covariance() const {
  const at::Tensor mu = mean();
  return (raw_outer_.cpu() / static_cast<double>(count_)) - at::outer(mu, mu);
}

void FeatureStats::save(const std::string& path, const std::string& key) const {
  Dict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", std::string(kCacheFormat));
  dict.insert("version", kCacheVersion);
  dict.insert("key", key);
  dict.insert("count", count_);
  dict.insert("max_items", max_items_);
  if (capture_mean_cov_) {
    dict.insert("raw_sum", raw_sum_.cpu());
    dict.insert("raw_outer", raw_outer_.cpu());
  }
  if (capture_all_) dict.insert("features", all());
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) create_output_directory(parent.string(), "the statistics' directory");
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  data::write_file_atomically(path, bytes.data(), bytes.size());
}

bool FeatureStats::load(const std::string& path, const std::string& key) {
  if (!std::filesystem::exists(path)) return false;
  try {
    const Dict dict = torch::pickle_load(read_file_bytes<char>(path)).toGenericDict();
    const auto text = [&](const char* name) { return dict.at(name).toStringRef(); };
    SG2_CHECK(text("format") == kCacheFormat && dict.at("version").toInt() == kCacheVersion,
              "not a version {} {} file", kCacheVersion, kCacheFormat);
    if (text("key") != key) {
      spdlog::warn("{}: cached statistics were computed for other inputs; recomputing", path);
      return false;
    }
    const int64_t count = dict.at("count").toInt();
    SG2_CHECK(count > 0 && dict.at("max_items").toInt() == max_items_, "count {} / max_items {} do not fit", count,
              dict.at("max_items").toInt());
    FeatureStats loaded(max_items_, capture_all_, capture_mean_cov_);
    if (capture_mean_cov_) {
      loaded.raw_sum_ = dict.at("raw_sum").toTensor();
      loaded.raw_outer_ = dict.at("raw_outer").toTensor();
      loaded.dim_ = loaded.raw_sum_.size(0);
      SG2_CHECK(loaded.raw_outer_.sizes() == at::IntArrayRef({loaded.dim_, loaded.dim_}), "sums of shapes {} and {}",
                loaded.raw_sum_.sizes(), loaded.raw_outer_.sizes());
    }
    if (capture_all_) {
      const at::Tensor features = dict.at("features").toTensor();
      SG2_CHECK(features.dim() == 2 && features.size(0) == count, "features {} for count {}", features.sizes(), count);
      loaded.chunks_ = {features};
      loaded.dim_ = features.size(1);
    }
    loaded.count_ = count;
    *this = std::move(loaded);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("{}: unreadable statistics cache ({}); recomputing", path, first_line(e.what()));
    return false;
  }
}

}  // namespace sg2::metrics
