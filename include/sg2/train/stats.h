#pragma once
// Training statistics collected on the device without synchronising: each report adds count, sum
// and sum of squares into device accumulators; they are read once per tick.

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sg2::train {

struct StatValue {
  double count = 0;
  double mean = 0;
  double std = 0;
};

class StatsCollector {
 public:
  // Adds every element of `values` (any shape) to the statistic `name`. No host sync.
  void report(const std::string& name, const at::Tensor& values);
  // Adds moments [count, sum, sum_sq] (float64, on the device) to the statistic `name`.
  void add_moments(const std::string& name, const at::Tensor& moments);
  // While recording, report() leaves the statistics as they are and keeps each report's moments
  // instead: the outputs of a part captured into a CUDA graph, whose replays compute them anew
  // and add them with add_moments (the accumulators themselves are replaced at every finish()).
  using Recorded = std::vector<std::pair<std::string, at::Tensor>>;
  void start_recording();
  Recorded stop_recording();
  // Adds one host-side value (timings, memory).
  void report_scalar(const std::string& name, double value);

  // Moments [count, sum, sum_sq] per statistic, packed in one float64 tensor [num_stats, 3] on the
  // accumulators' device; names() gives the row order. Ranks sum these before finish().
  at::Tensor packed_moments() const;
  std::vector<std::string> names() const;
  // Turns (possibly rank-summed) moments into values and clears the accumulators.
  std::map<std::string, StatValue> finish(const at::Tensor& moments);
  std::map<std::string, StatValue> finish() { return finish(packed_moments()); }

 private:
  std::map<std::string, at::Tensor> device_moments_;        // name -> [3] float64
  std::map<std::string, std::vector<double>> host_moments_;  // name -> {count, sum, sum_sq}
  void accumulate(const std::string& name, const at::Tensor& moments, bool owned);

  bool recording_ = false;
  Recorded recorded_;
};

}  // namespace sg2::train
