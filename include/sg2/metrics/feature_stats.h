#pragma once
// Feature statistics (reference: metric_utils.FeatureStats): float64 sums of features and of their
// outer products for the mean and covariance, and/or every feature for KID; at most max_items.
// Saved and loaded as the on-disk cache of real-image statistics.

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace sg2::metrics {

class FeatureStats {
 public:
  FeatureStats(int64_t max_items, bool capture_all, bool capture_mean_cov);

  // features: [n, D] on any device; rows past max_items are dropped. The sums live on the device
  // of the first append.
  void append(const at::Tensor& features);
  bool is_full() const { return count_ >= max_items_; }
  int64_t count() const { return count_; }
  int64_t max_items() const { return max_items_; }
  bool captures_all() const { return capture_all_; }
  bool captures_mean_cov() const { return capture_mean_cov_; }

  at::Tensor all() const;         // [count, D] float32 on the CPU
  at::Tensor mean() const;        // [D] float64 on the CPU
  at::Tensor covariance() const;  // [D, D] float64 on the CPU: E[x x^T] - mu mu^T (as the reference)

  // The cache file: a torch.save-compatible dict with `key` (what was computed from what) stored in
  // it; written atomically.
  void save(const std::string& path, const std::string& key) const;
  // Loads `path` if it exists, holds `key` and a full set of the requested captures; otherwise
  // returns false (and logs why when the file exists but does not fit).
  bool load(const std::string& path, const std::string& key);

 private:
  void check_dim(const at::Tensor& features) const;

  int64_t max_items_;
  bool capture_all_, capture_mean_cov_;
  int64_t count_ = 0;
  int64_t dim_ = -1;
  at::Tensor raw_sum_;    // [D] float64
  at::Tensor raw_outer_;  // [D, D] float64
  std::vector<at::Tensor> chunks_;
};

}  // namespace sg2::metrics
