#include "sg2/train/training_metrics.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <fstream>

namespace sg2::train {

TrainingMetrics::TrainingMetrics(const TrainConfig& config, std::shared_ptr<const data::Dataset> reals,
                                 dist::Communicator& comm, const at::Device& device, bool stop_on_signal) {
  SG2_CHECK(!config.metrics.empty(), "no metrics configured (metrics: [fid50k_full, ...])");
  metrics::EvaluationOptions options;
  options.batch = config.metric.batch;
  options.seed = static_cast<uint64_t>(config.metric.seed);
  options.cache_dir = metric_cache_dir(config);
  options.stop_on_signal = stop_on_signal;
  const nlohmann::json identity = metrics::dataset_identity(config.data.path, *reals);
  for (const std::string& name : config.metrics) {
    const std::string detector_file = metric_detector(config, name);
    SG2_CHECK(!detector_file.empty(), "metric {} has no detector (metric.detector, metric.pr_detector)", name);
    auto& evaluator = evaluators_[detector_file];
    if (!evaluator) {
      evaluator = std::make_unique<metrics::MetricEvaluator>(
          comm, metrics::load_torchscript_detector(detector_file, device, reals->resolution()), reals, identity,
          options);
    }
    metrics_.push_back({metrics::parse_metric(name), evaluator.get()});
  }
}

namespace {
// G in evaluation mode while it lives, in its former mode after, also when an evaluation throws.
class EvaluationMode {
 public:
  explicit EvaluationMode(nn::Generator& G) : G_(G), was_training_(G.is_training()) { G_.eval(); }
  ~EvaluationMode() { G_.train(was_training_); }
  EvaluationMode(const EvaluationMode&) = delete;
  EvaluationMode& operator=(const EvaluationMode&) = delete;

 private:
  nn::Generator& G_;
  bool was_training_;
};
}  // namespace

void TrainingMetrics::evaluate(nn::Generator& G, const std::function<void(const metrics::MetricResult&)>& on_result) {
  const EvaluationMode mode(G);
  for (const Metric& metric : metrics_) on_result(metric.evaluator->evaluate(metric.spec, G));
}

nlohmann::json metric_results(const metrics::MetricResult& result) {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [name, value] : result.values) values[name] = value;
  return values;
}

void append_metric_line(const std::string& run_dir, const metrics::MetricResult& result, int world_size,
                        const std::string& snapshot, double kimg) {
  const nlohmann::json line = {{"results", metric_results(result)},
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
