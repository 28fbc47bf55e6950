#pragma once
// Distributed metric evaluation (reference: metrics/metric_utils.py, metric_main.py).
//
// Work is cut into blocks of `batch` items: block b covers items [b * batch, (b + 1) * batch) and
// runs on rank b % world_size. Each round every rank computes one block's features, they are
// all-gathered through the communicator and appended in block order, so every rank ends with the
// same statistics whatever the world size. Fakes of block b come from G_ema with latents, labels and
// noise drawn from generators keyed by (seed, b): the union of fakes is independent of the world
// size. Reals are the whole dataset (not a training shard), without flips; their statistics are
// cached on disk under a key of dataset, detector and options, written atomically by rank 0 and
// read back by every rank through a broadcast.
//
// Metric names: fid<N>[k][_full] and kid<N>[k][_full], e.g. fid50k_full (50,000 fakes against every
// real image), fid50k (against the first 50,000 reals), fid2k_full, kid500_full; pr<N>[k]<nhood>[_full]
// (the last digit: the neighbourhood size), e.g. pr50k3_full (50,000 fakes against at most 200,000
// reals, the reference's cap), pr50k3 (against the first 50,000); is<N>[k] (the Inception Score of
// N fakes in 10 splits: is50k_mean, is50k_std); ppl_zfull, ppl_wfull, ppl_zend, ppl_wend and
// ppl2_wend (perceptual path length of 50,000 samples, generator_metrics.h), with _<N>[k] for
// another sample count (ppl_wend_2k).

#include "sg2/core/error.h"
#include "sg2/data/dataset.h"
#include "sg2/distributed/communicator.h"
#include "sg2/metrics/detector.h"
#include "sg2/metrics/feature_stats.h"
#include "sg2/metrics/generator_metrics.h"
#include "sg2/nn/networks.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace sg2::metrics {

struct MetricSpec {
  enum class Kind { FID, KID, PR, IS, PPL };
  std::string name;
  Kind kind = Kind::FID;
  int64_t num_fakes = 50000;
  int64_t max_reals = 0;  // 0: every real image (fid and kid _full)
  int64_t nhood = 3;      // pr: the neighbour whose distance is a point's radius
  int64_t num_splits = 10;  // is
  PathLengthOptions path_length;  // ppl (num_fakes: its samples)
};

// The reals that pr<N>[k]<nhood>_full compares with at most (stylegan2-ada-pytorch's max_real).
constexpr int64_t kPrecisionRecallMaxReals = 200000;

// Parses a metric name; errors list the accepted forms.
MetricSpec parse_metric(const std::string& name);

struct EvaluationOptions {
  int64_t batch = 64;        // items per block (fixed: part of what makes the result world-size invariant)
  uint64_t seed = 0;         // fakes' latents, labels and noise; KID subsets
  std::string cache_dir;     // real statistics; empty: no disk cache
  bool show_progress = true;
  // Each round of blocks starts with a vote on stop signals (install_stop_signal_handlers): where a
  // rank received one, every rank throws EvaluationStopped at the same block.
  bool stop_on_signal = false;
};

// A stop signal ended an evaluation (EvaluationOptions::stop_on_signal), on every rank together.
class EvaluationStopped : public Error {
 public:
  EvaluationStopped(int signal, const std::string& message) : Error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

struct MetricResult {
  std::string metric;
  // The values by name, as the reference's results dict: {fid50k_full: v}, or
  // {pr50k3_full_precision: p, pr50k3_full_recall: r}.
  std::vector<std::pair<std::string, double>> values;
  double seconds = 0;
  int64_t num_fakes = 0;
  int64_t num_reals = 0;
};

// What identifies a dataset's content in cache keys: its path and every file's name, size and
// modification time (so a rewritten dataset gets new statistics), its size and image shape.
nlohmann::json dataset_identity(const std::string& path, const data::Dataset& dataset);

// Computes features_of(start, count) -> [count, D] for the blocks of options.batch items this rank
// owns and appends every rank's blocks to `stats` in block order (all ranks call it together). D
// must be `feature_dim`. Throws EvaluationStopped as options.stop_on_signal says.
void gather_features_in_block_order(dist::Communicator& comm, int64_t num_items, int64_t feature_dim,
                                    const std::function<at::Tensor(int64_t start, int64_t count)>& features_of,
                                    FeatureStats& stats, const std::string& what, const EvaluationOptions& options);

// Why a FID of these sample counts is not comparable, or "" when it is: a covariance estimated from
// fewer samples than the detector has features is singular.
std::string few_samples_warning(const std::string& metric, int64_t num_reals, int64_t num_fakes, int64_t feature_dim);

class MetricEvaluator {
 public:
  // reals: the whole dataset; reals_identity: dataset_identity() of it. All ranks construct it.
  MetricEvaluator(dist::Communicator& comm, std::shared_ptr<FeatureDetector> detector,
                  std::shared_ptr<const data::Dataset> reals, nlohmann::json reals_identity, EvaluationOptions options);

  // Every rank calls it with its copy of G (identical replicas); every rank gets the result.
  MetricResult evaluate(const MetricSpec& spec, nn::Generator& G);

  // Real-image statistics (memory, then disk cache, then computed), and fakes' statistics.
  const FeatureStats& real_stats(int64_t max_items, bool capture_all);
  FeatureStats fake_stats(nn::Generator& G, int64_t num_fakes, bool capture_all);

 private:
  at::Tensor real_features(int64_t start, int64_t count);
  at::Tensor fake_images(nn::Generator& G, int64_t start, int64_t count);  // uint8 [count, C, R, R]
  MetricResult inception_score_of(const MetricSpec& spec, nn::Generator& G);
  MetricResult path_length_of(const MetricSpec& spec, nn::Generator& G);
  double distance_on_rank0(const MetricSpec& spec, const FeatureStats& reals, const FeatureStats& fakes);
  at::Tensor features_on_every_rank(const FeatureStats& stats);
  void warn_of_few_samples(const std::string& metric, int64_t num_reals, int64_t num_fakes);  // once a metric
  std::string cache_key(int64_t max_items, bool capture_all) const;

  dist::Communicator& comm_;
  std::shared_ptr<FeatureDetector> detector_;
  std::shared_ptr<const data::Dataset> reals_;
  nlohmann::json reals_identity_;
  at::Tensor label_table_;  // [N, label_dim] of the reals, for the fakes' labels (conditional networks)
  EvaluationOptions options_;
  std::vector<std::pair<std::string, std::unique_ptr<FeatureStats>>> real_cache_;  // key -> stats
  std::set<std::string> warned_;  // metrics whose few_samples_warning was logged
};

}  // namespace sg2::metrics
