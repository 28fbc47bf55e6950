#pragma once
// The metrics of a training config (`metrics`, `metric.*`), evaluated on G_ema by every rank
// together and appended by rank 0 to <run_dir>/metric-<name>.jsonl. Used by the training loop and by
// stylegan2_metrics, so both print the same numbers for the same snapshot and options.

#include "sg2/distributed/communicator.h"
#include "sg2/metrics/evaluator.h"
#include "sg2/train/config.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sg2::train {

class TrainingMetrics {
 public:
  // reals: the whole dataset of config.data (not a rank's shard); loads each metric's detector
  // (metric_detector: metric.detector, metric.pr_detector) onto `device`, each file once. All ranks
  // construct it. stop_on_signal: where the process installed stop handlers (the training), a stop
  // signal on any rank ends an evaluation with metrics::EvaluationStopped on every rank, within a block.
  TrainingMetrics(const TrainConfig& config, std::shared_ptr<const data::Dataset> reals, dist::Communicator& comm,
                  const at::Device& device, bool stop_on_signal);

  // Every configured metric of G (each rank's identical replica), in order: every rank hands each
  // result to on_result as soon as it is known.
  void evaluate(nn::Generator& G, const std::function<void(const metrics::MetricResult&)>& on_result);

 private:
  struct Metric {
    metrics::MetricSpec spec;
    metrics::MetricEvaluator* evaluator;  // the one of its detector file, in evaluators_
  };
  std::vector<Metric> metrics_;
  std::map<std::string, std::unique_ptr<metrics::MetricEvaluator>> evaluators_;  // by detector file
};

// {name: value, ...}: the reference's results dict of one evaluation.
nlohmann::json metric_results(const metrics::MetricResult& result);

// One line as stylegan2-ada-pytorch writes it: {"results": {name: value, ...}, "metric", "total_time",
// "total_time_str", "num_gpus", "snapshot_pkl", "timestamp"} plus "kimg".
void append_metric_line(const std::string& run_dir, const metrics::MetricResult& result, int world_size,
                        const std::string& snapshot, double kimg);

}  // namespace sg2::train
