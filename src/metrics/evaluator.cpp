#include "sg2/metrics/evaluator.h"

#include "sg2/core/error.h"
#include "sg2/core/progress.h"
#include "sg2/core/rng.h"
#include "sg2/core/system.h"
#include "sg2/core/timer.h"
#include "sg2/data/crc32c.h"
#include "sg2/data/loader.h"
#include "sg2/metrics/distance.h"
#include "sg2/metrics/precision_recall.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <regex>

namespace sg2::metrics {

namespace {

namespace fs = std::filesystem;

constexpr uint64_t kLatentStream = 0x66616b657a;  // keys of the fakes' random streams
constexpr uint64_t kLabelStream = 0x66616b6563;
constexpr uint64_t kNoiseStream = 0x66616b656e;
constexpr int64_t kKidSubsets = 100;
constexpr int64_t kKidSubsetSize = 1000;

nlohmann::json file_entries(const fs::path& root) {
  std::vector<fs::path> files;
  if (fs::is_regular_file(root)) files.push_back(root);
  if (fs::is_directory(root)) {
    for (const auto& entry : fs::recursive_directory_iterator(root))
      if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  nlohmann::json entries = nlohmann::json::array();
  for (const fs::path& file : files) {
    const auto mtime = fs::last_write_time(file).time_since_epoch();
    entries.push_back({fs::relative(file, fs::is_directory(root) ? root : root.parent_path()).string(),
                       fs::file_size(file), std::chrono::duration_cast<std::chrono::nanoseconds>(mtime).count()});
  }
  return entries;
}

// The stop vote of a round of blocks: every rank learns whether any received a stop signal.
void stop_if_a_rank_was_signalled(dist::Communicator& comm, const std::string& what, int64_t done, int64_t total) {
  const auto signal = static_cast<int>(comm.max_over_ranks(stop_signal()));
  if (signal != 0) throw EvaluationStopped(signal, fmt::format("{}: stopped by signal {} at {} of {}", what, signal,
                                                               done, total));
}

at::Device device_of(const nn::Generator& G) {
  const auto parameters = G.parameters();
  return parameters.empty() ? at::Device(at::kCPU) : parameters.front().device();
}

}  // namespace

namespace {

// The image count of a metric's name ("50" and "k" of fid50k): at most 10^9 images, so that it
// neither overflows nor asks for years of generation.
int64_t metric_image_count(const std::string& name, const std::string& digits, bool thousands) {
  constexpr int64_t kMaxImages = 1'000'000'000;
  const bool fits = digits.size() <= 10 && std::stoll(digits) <= kMaxImages / (thousands ? 1000 : 1);
  SG2_CHECK(fits, "metric '{}': {}{} images is more than the {} a metric may generate", name, digits,
            thousands ? "k" : "", kMaxImages);
  return std::stoll(digits) * (thousands ? 1000 : 1);
}

}  // namespace

MetricSpec parse_metric(const std::string& name) {
  static const std::regex distance_pattern("(fid|kid)([0-9]+)(k?)(_full)?");
  static const std::regex precision_recall_pattern("pr([0-9]+)(k?)([1-9])(_full)?");
  static const std::regex inception_score_pattern("is([0-9]+)(k?)");
  static const std::regex path_length_pattern("ppl(2?)_(z|w)(full|end)(?:_([0-9]+)(k?))?");
  std::smatch match;
  MetricSpec spec;
  spec.name = name;
  if (std::regex_match(name, match, distance_pattern)) {
    spec.kind = match[1] == "fid" ? MetricSpec::Kind::FID : MetricSpec::Kind::KID;
    spec.num_fakes = metric_image_count(name, match[2], match[3].length() > 0);
    spec.max_reals = match[4].length() > 0 ? 0 : spec.num_fakes;
  } else if (std::regex_match(name, match, precision_recall_pattern)) {
    spec.kind = MetricSpec::Kind::PR;
    spec.num_fakes = metric_image_count(name, match[1], match[2].length() > 0);
    spec.nhood = std::stoll(match[3]);
    spec.max_reals = match[4].length() > 0 ? kPrecisionRecallMaxReals : spec.num_fakes;
  } else if (std::regex_match(name, match, inception_score_pattern)) {
    spec.kind = MetricSpec::Kind::IS;
    spec.num_fakes = metric_image_count(name, match[1], match[2].length() > 0);
    SG2_CHECK(spec.num_fakes >= spec.num_splits, "metric '{}' needs at least {} images (one per split)", name,
              spec.num_splits);
  } else if (std::regex_match(name, match, path_length_pattern)) {
    spec.kind = MetricSpec::Kind::PPL;
    spec.path_length.crop = match[1].length() == 0;  // ppl2_*: the uncropped variant
    spec.path_length.w_space = match[2] == "w";
    spec.path_length.full = match[3] == "full";
    spec.num_fakes = match[4].matched ? metric_image_count(name, match[4], match[5].length() > 0) : 50000;
  } else {
    SG2_FAIL("unknown metric '{}': expected fid<N>[k][_full], kid<N>[k][_full], pr<N>[k]<nhood>[_full], is<N>[k] "
             "or ppl[2]_{{z,w}}{{full,end}}[_<N>[k]], e.g. fid50k_full, kid50k_full, pr50k3_full, is50k, ppl_wend, "
             "ppl2_wend, fid10k, ppl_zfull_2k",
             name);
  }
  SG2_CHECK(spec.num_fakes >= 2, "metric '{}' needs at least 2 generated images", name);
  SG2_CHECK(spec.kind != MetricSpec::Kind::PR || spec.num_fakes > spec.nhood,
            "metric '{}' needs more generated images than its neighbourhood size {}", name, spec.nhood);
  return spec;
}

nlohmann::json dataset_identity(const std::string& path, const data::Dataset& dataset) {
  const data::ImageShape shape = dataset.shape();
  nlohmann::json identity = {{"path", fs::exists(path) ? fs::absolute(path).lexically_normal().string() : path},
                             {"name", dataset.name()},
                             {"subset", dataset.subset()},
                             {"size", dataset.size()},
                             {"shape", {shape.channels, shape.height, shape.width}},
                             {"files", file_entries(path)}};
  return identity;
}

void gather_features_in_block_order(dist::Communicator& comm, int64_t num_items, int64_t feature_dim,
                                    const std::function<at::Tensor(int64_t start, int64_t count)>& features_of,
                                    FeatureStats& stats, const std::string& what, const EvaluationOptions& options) {
  const int64_t batch = options.batch;
  SG2_CHECK(batch > 0 && feature_dim > 0, "block size {} and feature dim {} must be positive", batch, feature_dim);
  const int64_t world = comm.size(), num_blocks = (num_items + batch - 1) / batch;
  const auto block_items = [&](int64_t block) { return std::min(batch, num_items - block * batch); };
  ProgressMeter meter(what, num_items, "img", options.show_progress && comm.rank() == 0);
  for (int64_t first = 0; first < num_blocks && !stats.is_full(); first += world) {
    if (options.stop_on_signal) stop_if_a_rank_was_signalled(comm, what, std::min(num_items, first * batch), num_items);
    const int64_t mine = first + comm.rank();
    at::Tensor local = at::zeros({batch, feature_dim}, at::TensorOptions(comm.device()).dtype(at::kFloat));
    if (mine < num_blocks) {
      const at::Tensor features = features_of(mine * batch, block_items(mine));  // [n, D]
      SG2_CHECK(features.dim() == 2 && features.size(0) == block_items(mine) && features.size(1) == feature_dim,
                "{}: block {} gave features {}, expected [{}, {}]", what, mine, features.sizes(), block_items(mine),
                feature_dim);
      local.narrow(0, 0, features.size(0)).copy_(features);
    }
    const at::Tensor gathered = comm.allgather(local);  // [world, batch, D]
    for (int64_t rank = 0; rank < world && first + rank < num_blocks; ++rank)
      stats.append(gathered[rank].narrow(0, 0, block_items(first + rank)));
    meter.update(std::min(num_items, (first + world) * batch));
  }
  meter.finish();
}

std::string few_samples_warning(const std::string& metric, int64_t num_reals, int64_t num_fakes, int64_t feature_dim) {
  if (std::min(num_reals, num_fakes) >= feature_dim) return "";
  return fmt::format("{} compares {} fakes with {} reals in the detector's {} features: a covariance of fewer "
                     "samples than features is singular, and the FID then depends strongly on the counts; compare it "
                     "only with FIDs over the same counts", metric, num_fakes, num_reals, feature_dim);
}

MetricEvaluator::MetricEvaluator(dist::Communicator& comm, std::shared_ptr<FeatureDetector> detector,
                                 std::shared_ptr<const data::Dataset> reals, nlohmann::json reals_identity,
                                 EvaluationOptions options)
    : comm_(comm),
      detector_(std::move(detector)),
      reals_(std::move(reals)),
      reals_identity_(std::move(reals_identity)),
      options_(std::move(options)) {
  SG2_CHECK(detector_->feature_dim() > 0, "the detector has not been probed (feature dimension unknown)");
  SG2_CHECK(reals_->size() >= 2, "the real dataset '{}' has {}: the metrics compare distributions, whose "
            "covariance needs at least 2 images (tens of thousands for a meaningful FID)", reals_->name(),
            reals_->size() == 1 ? "1 image" : "no images");
  if (reals_->label_dim() > 0) label_table_ = data::all_labels(*reals_);
}

std::string MetricEvaluator::cache_key(int64_t max_items, bool capture_all) const {
  return nlohmann::json{{"dataset", reals_identity_},
                        {"detector", detector_->identity()},
                        {"max_items", max_items},
                        {"capture_all", capture_all},
                        {"flip", false}}
      .dump();
}

at::Tensor MetricEvaluator::real_features(int64_t start, int64_t count) {
  return detector_->features(data::read_images(*reals_, data::index_range(start, count)));  // [n, C, H, W] -> [n, D]
}

at::Tensor MetricEvaluator::fake_images(nn::Generator& G, int64_t start, int64_t count) {
  const auto block = static_cast<uint64_t>(start / options_.batch);
  const at::Device device = device_of(G);
  at::Generator latents = nn::make_rng(at::kCPU, mix_seed({options_.seed, kLatentStream, block}));
  const at::Tensor z = at::randn({count, G.options.z_dim}, latents).to(device);  // [n, z_dim]
  at::Tensor c = at::zeros({count, G.options.c_dim});                           // [n, c_dim]
  if (G.options.c_dim > 0) {
    SG2_CHECK(reals_->label_dim() == G.options.c_dim, "the network has {} classes, the dataset '{}' {}",
              G.options.c_dim, reals_->name(), reals_->label_dim());
    at::Generator labels = nn::make_rng(at::kCPU, mix_seed({options_.seed, kLabelStream, block}));
    c = label_table_.index_select(0, at::randint(reals_->size(), {count}, labels, at::kLong));
  }
  nn::SynthesisRun synthesis;
  synthesis.noise_mode = nn::NoiseMode::Random;
  synthesis.fused_modconv = true;
  synthesis.rng = nn::make_rng(device, mix_seed({options_.seed, kNoiseStream, block}));
  at::NoGradGuard no_grad;
  const at::Tensor img = G.forward(z, c.to(device), nn::MappingNetwork::Run{}, synthesis);  // [n, C, R, R]
  return (img * 127.5 + 128).clamp(0, 255).to(at::kByte);
}

const FeatureStats& MetricEvaluator::real_stats(int64_t max_items, bool capture_all) {
  const int64_t count = max_items > 0 ? std::min(max_items, reals_->size()) : reals_->size();
  const std::string key = cache_key(count, capture_all);
  for (const auto& [cached_key, stats] : real_cache_)
    if (cached_key == key) return *stats;
  auto stats = std::make_unique<FeatureStats>(count, capture_all, true);
  std::string path;
  if (!options_.cache_dir.empty()) {
    // The name depends on what stays put (path, detector, options); the full key inside catches changes.
    const std::string stable = fmt::format("{} {} {} {} {}", reals_identity_.at("path").dump(),
                                           reals_identity_.at("subset").dump(), detector_->name(), count, capture_all);
    path = fmt::format("{}/{}-{}-{}-{:08x}.pt", options_.cache_dir, reals_->name(), detector_->name(),
                       capture_all ? "all" : "meancov", data::crc32c(stable.data(), stable.size()));
  }
  const bool loaded = comm_.any(comm_.rank() == 0 && !path.empty() && stats->load(path, key));
  if (loaded) {
    if (comm_.rank() == 0) spdlog::info("Real-image statistics from {}", path);
  } else {
    gather_features_in_block_order(
        comm_, count, detector_->feature_dim(), [this](int64_t start, int64_t n) { return real_features(start, n); },
        *stats, fmt::format("real features ({})", reals_->name()), options_);
    if (comm_.rank() == 0 && !path.empty()) stats->save(path, key);
  }
  real_cache_.emplace_back(key, std::move(stats));
  return *real_cache_.back().second;
}

FeatureStats MetricEvaluator::fake_stats(nn::Generator& G, int64_t num_fakes, bool capture_all) {
  FeatureStats stats(num_fakes, capture_all, !capture_all);
  gather_features_in_block_order(
      comm_, num_fakes, detector_->feature_dim(),
      [this, &G](int64_t start, int64_t n) { return detector_->features(fake_images(G, start, n)); }, stats,
      "fake features", options_);
  return stats;
}

// FID or KID from rank 0's real statistics (possibly read from the cache by rank 0 alone), on every rank.
double MetricEvaluator::distance_on_rank0(const MetricSpec& spec, const FeatureStats& reals,
                                          const FeatureStats& fakes) {
  at::Tensor value = at::zeros({1}, at::TensorOptions(comm_.device()).dtype(at::kDouble));
  if (comm_.rank() == 0) {
    // KID's kernel matrices run where the collectives do (the GPU under NCCL).
    value.fill_(spec.kind == MetricSpec::Kind::KID
                    ? kernel_inception_distance(reals.all().to(comm_.device()), fakes.all().to(comm_.device()),
                                                kKidSubsets, kKidSubsetSize, options_.seed)
                    : frechet_distance(reals.mean(), reals.covariance(), fakes.mean(), fakes.covariance()));
  }
  comm_.broadcast({value}, 0);
  return value.cpu().item<double>();
}

// [N, D] on the communicator's device, on every rank: where rank 0 alone read them from the cache, its
// copy goes to the others.
at::Tensor MetricEvaluator::features_on_every_rank(const FeatureStats& stats) {
  const bool everywhere = !comm_.any(stats.count() < stats.max_items());
  if (everywhere) return stats.all().to(comm_.device());
  at::Tensor features = comm_.rank() == 0 ? stats.all().to(comm_.device())
                                          : at::empty({stats.max_items(), detector_->feature_dim()},
                                                      at::TensorOptions(comm_.device()).dtype(at::kFloat));
  comm_.broadcast({features}, 0);
  return features;
}

// Every rank holds every block's values after the gather: each computes the same score from them.
MetricResult MetricEvaluator::inception_score_of(const MetricSpec& spec, nn::Generator& G) {
  const at::Tensor grey = at::full({2, G.options.img_channels, 32, 32}, 128, at::kByte);
  const int64_t classes = detector_->class_probabilities(grey).size(1);
  FeatureStats probabilities(spec.num_fakes, true, false);
  gather_features_in_block_order(
      comm_, spec.num_fakes, classes,
      [this, &G](int64_t start, int64_t n) { return detector_->class_probabilities(fake_images(G, start, n)); },
      probabilities, "fake class probabilities", options_);
  const auto [mean, std] = inception_score(probabilities.all(), spec.num_splits);
  MetricResult result;
  result.values = {{spec.name + "_mean", mean}, {spec.name + "_std", std}};
  result.num_fakes = probabilities.count();
  return result;
}

MetricResult MetricEvaluator::path_length_of(const MetricSpec& spec, nn::Generator& G) {
  PathLengthSampler sampler(G, *detector_, spec.path_length, options_.seed, label_table_);
  FeatureStats distances(spec.num_fakes, true, false);
  gather_features_in_block_order(
      comm_, spec.num_fakes, 1,
      [this, &sampler](int64_t start, int64_t n) {
        return sampler.distances(start, n, static_cast<uint64_t>(start / options_.batch));
      },
      distances, "path length samples", options_);
  MetricResult result;
  result.values = {{spec.name, path_length_mean(distances.all())}};
  result.num_fakes = distances.count();
  return result;
}

void MetricEvaluator::warn_of_few_samples(const std::string& metric, int64_t num_reals, int64_t num_fakes) {
  const std::string warning = few_samples_warning(metric, num_reals, num_fakes, detector_->feature_dim());
  if (comm_.rank() == 0 && !warning.empty() && warned_.insert(metric).second) spdlog::warn(warning);
}

MetricResult MetricEvaluator::evaluate(const MetricSpec& spec, nn::Generator& G) {
  const Stopwatch clock;
  if (spec.kind == MetricSpec::Kind::IS || spec.kind == MetricSpec::Kind::PPL) {
    MetricResult result = spec.kind == MetricSpec::Kind::IS ? inception_score_of(spec, G) : path_length_of(spec, G);
    result.metric = spec.name;
    result.seconds = clock.seconds();
    return result;
  }
  const bool every_feature = spec.kind != MetricSpec::Kind::FID;
  const FeatureStats& reals = real_stats(spec.max_reals, every_feature);
  const FeatureStats fakes = fake_stats(G, spec.num_fakes, every_feature);
  MetricResult result;
  result.metric = spec.name;
  if (spec.kind == MetricSpec::Kind::PR) {
    const PrecisionRecall pr =
        precision_recall(comm_, features_on_every_rank(reals), fakes.all().to(comm_.device()), spec.nhood);
    result.values = {{spec.name + "_precision", pr.precision}, {spec.name + "_recall", pr.recall}};
  } else {
    result.values = {{spec.name, distance_on_rank0(spec, reals, fakes)}};
  }
  if (spec.kind == MetricSpec::Kind::FID) warn_of_few_samples(spec.name, reals.max_items(), fakes.count());
  result.num_fakes = fakes.count();
  result.num_reals = reals.max_items();
  result.seconds = clock.seconds();
  return result;
}

}  // namespace sg2::metrics
