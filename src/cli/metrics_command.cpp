#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/logging.h"
#include "sg2/core/system.h"
#include "sg2/data/dataset.h"
#include "sg2/metrics/builtin_detector.h"
#include "sg2/cli/command_line.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/trainer.h"
#include "sg2/train/training_metrics.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

namespace sg2::cli {

using namespace train;  // the command layer drives the training library

namespace {

// {"metric", "results": {name: value, ...}, "seconds", "num_fakes", "world_size", "snapshot"}, and
// "value" where the metric has one (fid, kid).
nlohmann::json result_line(const metrics::MetricResult& result, int world_size, const std::string& snapshot) {
  nlohmann::json line = {{"metric", result.metric}, {"results", metric_results(result)}, {"seconds", result.seconds},
                         {"num_fakes", result.num_fakes}, {"world_size", world_size}, {"snapshot", snapshot}};
  if (result.values.size() == 1) line["value"] = result.values.front().second;
  return line;
}

}  // namespace

void MetricsCommand::add_to(CLI::App& app) {
  app.add_option("--network", network_, "Snapshot file (network-snapshot-*.pt); its G_ema is evaluated")
      ->check(CLI::ExistingFile);
  // Listed: what an evaluation reads (--metrics, --detector, --data, metric.*, the device and the
  // launch); the training keys are accepted (a snapshot's config carries them) but not listed.
  config_.add_to(app, {"metrics", "metric.", "data.", "run.device", "run.threads", "dist."});
  app.add_flag("--no-log", no_log_, "Do not append to metric-<name>.jsonl beside the snapshot");
  app.add_flag("-v,--verbose", verbose_, "More log output");
}

int MetricsCommand::run() {
  init_logging(0, verbose_);
  SG2_CHECK(!network_.empty(), "--network SNAPSHOT is required");
  const Snapshot snapshot = load_snapshot(network_);
  TrainConfig config = config_.resolve(snapshot.config_yaml);
  SG2_CHECK(!config.metrics.empty() || !config_.given("metrics"),
            "--metrics: an empty list; name the metrics, e.g. fid50k_full or fid10k_full,kid10k_full");
  if (config.metrics.empty()) config.metrics = {"fid50k_full"};
  validate_metric_options(config);
  return run_session_on_every_rank("stylegan2_metrics", config, verbose_, [&](dist::Session& session) {
    spdlog::info("Compute: {}", apply_libtorch_settings(config, session.world()));
    const at::Device device = session.comm().device();
    auto G = load_generator(snapshot, inference_precision(config, device));  // the resolved config: flags too
    G->to(device);
    nn::set_compute(*G, compute_settings_of(config));
    spdlog::info("Precision: G {}", G->options.precision.describe(G->options.img_resolution));
    const std::shared_ptr<data::Dataset> reals = open_configured_dataset(config);
    check_network_fits_dataset(G->options, network_, *reals, config.data.path);
    TrainingMetrics metrics(config, reals, session.comm(), device, /*stop_on_signal=*/false);  // a signal ends it
    const std::string run_dir = std::filesystem::path(network_).parent_path().string();
    const std::string snapshot_file = std::filesystem::path(network_).filename().string();
    const double kimg = static_cast<double>(snapshot.integer("progress.cur_nimg")) / 1e3;
    metrics.evaluate(*G, [&](const metrics::MetricResult& result) {  // each line as soon as it is known
      if (!session.world().is_root()) return;
      std::cout << result_line(result, session.world().size, snapshot_file).dump() << std::endl;
      if (no_log_) return;
      append_metric_line(run_dir.empty() ? "." : run_dir, result, session.world().size, snapshot_file, kimg);
    });
    return 0;
  });
}

void DetectorCommand::add_to(CLI::App& app) {
  app.add_option("--data", data_, "Labelled dataset (any dataset path stylegan2_train takes)")->required();
  app.add_option("--split", split_, "Split to train on (Fashion-MNIST: train, test, all)")->capture_default_str();
  app.add_option("--heldout-split", heldout_split_, "Split of the same path to report accuracy on (e.g. test)");
  app.add_option("--out", out_, "Detector file to write (TorchScript)")->required();
  app.add_flag("--overwrite", overwrite_, "Replace an existing --out file");
  app.add_option("--epochs", epochs_, "Passes over the data")->capture_default_str()->check(CLI::Range(1, 100000));
  app.add_option("--batch", batch_, "Images per step")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--lr", learning_rate_, "Adam learning rate")->capture_default_str()->check(CLI::Range(1e-9, 10.0));
  app.add_option("--max-images", max_images_, "Images per epoch (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--seed", seed_, "Initialisation and shuffling seed")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--threads", threads_, "CPU threads (0: all cores)")->capture_default_str()->check(CLI::Range(0, 1024));
}

int DetectorCommand::run() {
  init_logging(0, false);
  check_output_file("--out", out_, overwrite_, {{data_, "the --data it trains on"}});
  const std::string out_dir = std::filesystem::path(out_).parent_path().string();
  if (!out_dir.empty()) create_output_directory(out_dir, "--out's directory");  // before the training, not after
  if (threads_ > 0) at::set_num_threads(threads_);
  limit_blas_threads();
  data::DatasetOptions options;
  options.path = data_;
  options.split = split_;
  options.use_labels = true;
  options.labels_for = "train-detector learns to classify the images of --data";
  const auto train = data::open_dataset(options);
  // Splits exist in Fashion-MNIST's IDX files only: elsewhere a "held-out" split would be the training set.
  SG2_CHECK(!train->subset().empty() || (split_ == "train" && heldout_split_.empty()),
            "--split / --heldout-split: '{}' has no splits (only the Fashion-MNIST IDX files do); train on it "
            "without them",
            data_);
  std::shared_ptr<data::Dataset> heldout;
  if (!heldout_split_.empty()) {
    SG2_CHECK(heldout_split_ != split_, "--heldout-split {} is the training split itself", heldout_split_);
    options.split = heldout_split_;
    heldout = data::open_dataset(options);
  }
  metrics::DetectorTrainingOptions training;
  training.epochs = epochs_;
  training.batch = batch_;
  training.learning_rate = learning_rate_;
  training.max_images = max_images_;
  training.seed = static_cast<uint64_t>(seed_);
  spdlog::info("Training the built-in detector on {} ({} images, {} classes)", train->name(), train->size(),
               train->label_dim());
  const auto result = metrics::train_builtin_detector(*train, heldout.get(), training, out_);
  std::cout << nlohmann::json{{"detector", out_}, {"loss", result.final_loss}, {"train_accuracy", result.train_accuracy},
                              {"heldout_accuracy", heldout ? nlohmann::json(result.heldout_accuracy) : nlohmann::json(nullptr)}}
                   .dump()
            << std::endl;
  return 0;
}

}  // namespace sg2::cli
