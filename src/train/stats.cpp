#include "sg2/train/stats.h"

#include <cmath>

namespace sg2::train {

void StatsCollector::report(const std::string& name, const at::Tensor& values) {
  at::Tensor v = values.detach().to(at::kDouble).flatten();
  at::Tensor moments = at::stack({at::full({}, static_cast<double>(v.numel()), v.options()), v.sum(), v.square().sum()});
  if (recording_) {
    recorded_.emplace_back(name, moments);
    return;
  }
  accumulate(name, moments, /*owned=*/true);
}

void StatsCollector::add_moments(const std::string& name, const at::Tensor& moments) {
  accumulate(name, moments, /*owned=*/false);
}

// A statistic's first moments become its accumulator: `moments` itself where nothing else holds
// it, else a copy (a graph's outputs are overwritten by its next replay).
void StatsCollector::accumulate(const std::string& name, const at::Tensor& moments, bool owned) {
  auto it = device_moments_.find(name);
  if (it == device_moments_.end()) {
    device_moments_.emplace(name, owned ? moments : moments.clone());
  } else {
    it->second.add_(moments);
  }
}

void StatsCollector::start_recording() {
  recording_ = true;
  recorded_.clear();
}

StatsCollector::Recorded StatsCollector::stop_recording() {
  recording_ = false;
  return std::move(recorded_);
}

void StatsCollector::report_scalar(const std::string& name, double value) {
  auto& m = host_moments_[name];
  if (m.empty()) m.assign(3, 0.0);
  m[0] += 1;
  m[1] += value;
  m[2] += value * value;
}

std::vector<std::string> StatsCollector::names() const {
  std::vector<std::string> out;
  for (const auto& [name, m] : device_moments_) out.push_back(name);
  for (const auto& [name, m] : host_moments_) out.push_back(name);
  return out;
}

at::Tensor StatsCollector::packed_moments() const {
  std::vector<at::Tensor> device_rows, rows;
  for (const auto& [name, m] : device_moments_) device_rows.push_back(m);
  if (!device_rows.empty()) rows.push_back(at::stack(device_rows).cpu());  // one transfer
  for (const auto& [name, m] : host_moments_) rows.push_back(at::tensor(m, at::kDouble).unsqueeze(0));
  if (rows.empty()) return at::zeros({0, 3}, at::kDouble);
  return at::cat(rows);
}

std::map<std::string, StatValue> StatsCollector::finish(const at::Tensor& moments) {
  std::map<std::string, StatValue> out;
  const auto names_in_order = names();
  at::Tensor host = moments.to(at::kCPU, at::kDouble).contiguous();
  const double* m = host.data_ptr<double>();
  for (size_t i = 0; i < names_in_order.size(); ++i) {
    const double count = m[3 * i], sum = m[3 * i + 1], sum_sq = m[3 * i + 2];
    StatValue value;
    value.count = count;
    if (count > 0) {
      value.mean = sum / count;
      value.std = std::sqrt(std::max(0.0, sum_sq / count - value.mean * value.mean));
    }
    out[names_in_order[i]] = value;
  }
  device_moments_.clear();
  host_moments_.clear();
  return out;
}

}  // namespace sg2::train
