#include "sg2/train/training_metrics.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fstream>

namespace sg2::train {

TrainingMetrics::TrainingMetrics(const TrainConfig& config, std::shared_ptr<const data::Dataset> reals,
                                 dist::Communicator& comm, const at::Device& device, bool show_progress) {
  for (const std::string& name : config.metrics) specs_.push_back(metrics::parse_metric(name));
  SG2_CHECK(!specs_.empty(), "no metrics configured (metrics: [fid50k_full, ...])");
  SG2_CHECK(!config.metric.detector.empty(), "metric.detector is not set");
  std::shared_ptr<metrics::FeatureDetector> detector =
      metrics::load_torchscript_detector(config.metric.detector, device, reals->resolution());
  metrics::EvaluationOptions options;
  options.batch = config.metric.batch;
  options.seed = static_cast<uint64_t>(config.metric.seed);
  options.cache_dir = metric_cache_dir(config);
  options.show_progress = show_progress;
  evaluator_ = std::make_unique<metrics::MetricEvaluator>(
      comm, std::move(detector), reals, metrics::dataset_identity(config.data.path, *reals), options);
}

std::vector<metrics::MetricResult> TrainingMetrics::evaluate(nn::Generator& G) {
  std::vector<metrics::MetricResult> results;
  const bool was_training = G.is_training();
  G.eval();
  for (const metrics::MetricSpec& spec : specs_) results.push_back(evaluator_->evaluate(spec, G));
  G.train(was_training);
  return results;
}

void append_metric_line(const std::string& run_dir, const metrics::MetricResult& result, int world_size,
                        const std::string& snapshot, double kimg) {
  const nlohmann::json line = {{"results", {{result.metric, result.value}}},
                               {"metric", result.metric},
                               {"total_time", result.seconds},
                               {"total_time_str", format_duration(result.seconds)},
                               {"num_gpus", world_size},
                               {"snapshot_pkl", snapshot},
                               {"timestamp", unix_time()},
                               {"kimg", kimg}};
  const std::string path = run_dir + "/metric-" + result.metric + ".jsonl";
  std::ofstream out(path, std::ios::app);
  out << line.dump() << "\n";
  SG2_CHECK(out.good(), "cannot append to '{}'", path);
}

}  // namespace sg2::train
