// The metric evaluator's all-gather across real processes (mpirun; a plain run is a world of one):
// rank-tagged features arrive complete, in block order, from the rank that owns each block; real
// statistics equal a one-process computation whatever the world size, as do precision and recall,
// the Inception Score and perceptual path length; a stop signal on one rank stops every rank together.
#include "sg2/core/system.h"
#include "sg2/data/fashion_mnist.h"
#include "sg2/data/loader.h"
#include "sg2/distributed/communicator.h"
#include "sg2/metrics/evaluator.h"
#include "sg2/metrics/precision_recall.h"
#include "sg2/data/synthetic.h"
#include "sg2/nn/state_dict.h"
#include "standin_detectors.h"

#include "test_world.h"

#include <gtest/gtest.h>
#include <torch/script.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>

namespace sg2::metrics {
namespace {

dist::Communicator& comm() { return test::world(); }

// A directory rank 0 creates for files every rank reads, of its own: ctest runs the .local, .np2 and
// .np3 jobs of these tests at the same time.
std::string shared_directory() {
  std::string directory;
  if (comm().rank() == 0) {
    std::string name = (std::filesystem::temp_directory_path() / "sg2-gather-XXXXXX").string();
    if (mkdtemp(name.data()) != nullptr) directory = name;
  }
  directory = comm().broadcast_bytes(directory, 0);  // "" on every rank when rank 0 failed
  EXPECT_FALSE(directory.empty()) << "rank 0 could not create a directory in "
                                  << std::filesystem::temp_directory_path();
  return directory;
}

TEST(GatherFeatures, EveryRanksBlocksArriveInBlockOrder) {
  for (const auto& [num_items, batch] : std::vector<std::pair<int64_t, int64_t>>{{1, 4}, {4, 4}, {10, 3}, {37, 5}, {24, 4}}) {
    FeatureStats stats(num_items, true, false);
    int64_t calls = 0;
    EvaluationOptions options;
    options.batch = batch;
    options.show_progress = false;
    gather_features_in_block_order(
        comm(), num_items, 2,
        [&](int64_t start, int64_t count) {  // [count, 2]: (item index, producing rank)
          ++calls;
          return at::stack({at::arange(start, start + count, at::kFloat), at::full({count}, comm().rank(), at::kFloat)}, 1);
        },
        stats, "tagged", options);
    const at::Tensor all = stats.all();
    ASSERT_EQ(all.size(0), num_items) << num_items << " items in blocks of " << batch;
    const at::Tensor index = at::arange(num_items, at::kFloat);
    EXPECT_TRUE(at::equal(all.select(1, 0), index));
    EXPECT_TRUE(at::equal(all.select(1, 1), index.div(batch, "floor").remainder(comm().size())));
    const int64_t blocks = (num_items + batch - 1) / batch;
    EXPECT_EQ(calls, blocks / comm().size() + (comm().rank() < blocks % comm().size() ? 1 : 0));
  }
}

// A real SIGTERM to the last rank in its third block (the handlers the training installs): every
// rank stops at the start of the next round, with the signal and how far the gather came.
// The training's stop handlers while it lives; the former handlers and no pending stop after.
class StopHandlers {
 public:
  StopHandlers() {
    sigaction(SIGINT, nullptr, &interrupt_);
    sigaction(SIGTERM, nullptr, &terminate_);
    install_stop_signal_handlers();
  }
  ~StopHandlers() {
    clear_stop_signal();
    sigaction(SIGINT, &interrupt_, nullptr);
    sigaction(SIGTERM, &terminate_, nullptr);
  }

 private:
  struct sigaction interrupt_ {};
  struct sigaction terminate_ {};
};

TEST(GatherFeatures, AStopSignalOnOneRankStopsEveryRankAtTheSameBlock) {
  const StopHandlers handlers;
  EvaluationOptions options;
  options.batch = 4;
  options.show_progress = false;
  options.stop_on_signal = true;
  const int64_t world = comm().size(), signalled_block = 2 * world + world - 1;  // the last rank's third
  FeatureStats stats(400, false, true);
  int64_t calls = 0;
  std::string message;
  int signal = 0;
  try {
    gather_features_in_block_order(
        comm(), 400, 1,
        [&](int64_t start, int64_t count) {
          ++calls;
          if (start / options.batch == signalled_block) std::raise(SIGTERM);
          return at::zeros({count, 1});
        },
        stats, "signalled", options);
  } catch (const EvaluationStopped& stopped) {
    signal = stopped.signal();
    message = stopped.what();
  }
  EXPECT_EQ(signal, SIGTERM);
  EXPECT_EQ(calls, 3) << "rank " << comm().rank() << " computed blocks past the round of the signal";
  EXPECT_EQ(stats.count(), 3 * world * options.batch);
  EXPECT_NE(message.find(fmt::format("signalled: stopped by signal 15 at {} of 400", 3 * world * 4)),
            std::string::npos) << message;
}

TEST(GatherFeatures, RealStatisticsEqualOneProcessComputation) {
  const std::string path = "/usr/share/datasets/fashion-mnist";
  auto reals = std::make_shared<data::FashionMnistDataset>(path, "test", false, 203);
  // A detector file written by rank 0 (each rank loads it as it would the Inception file).
  const std::string directory = shared_directory();
  ASSERT_FALSE(directory.empty());
  const std::string file = directory + "/detector.pt";
  if (comm().rank() == 0) {
    torch::jit::Module module("GatherDetector");
    module.define(R"(
def forward(self, images, return_features: bool = False):
    return torch.cat([images.mean([2, 3]), images.amax([2, 3]), images[:, :, 10:20, 8:24].mean([2, 3])], 1)
)");
    module.save(file);
  }
  comm().barrier();
  std::shared_ptr<FeatureDetector> detector = load_torchscript_detector(file, at::kCPU);
  EvaluationOptions options;
  options.batch = 16;
  options.show_progress = false;
  MetricEvaluator evaluator(comm(), detector, reals, dataset_identity(path, *reals), options);
  const FeatureStats& stats = evaluator.real_stats(0, false);

  const at::Tensor images = data::read_images(*reals, data::index_range(0, reals->size()));
  const at::Tensor features = detector->features(images).to(at::kDouble);  // [203, 9]
  const at::Tensor centered = features - features.mean(0);
  EXPECT_TRUE(at::allclose(stats.mean(), features.mean(0), 1e-10, 1e-10));
  EXPECT_TRUE(at::allclose(stats.covariance(), at::matmul(centered.transpose(0, 1), centered) / 203.0, 1e-8, 1e-8));
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(directory);
}

TEST(PrecisionRecallRanks, EveryWorldSizeComputesTheOneProcessResult) {
  at::Generator rng = at::detail::createCPUGenerator(5);  // the same features on every rank
  const at::Tensor reals = at::randn({130, 8}, rng);                   // [130, 8]
  const at::Tensor fakes = at::randn({90, 8}, rng) * 0.8 + 0.4;       // [90, 8]
  const PrecisionRecallBlocks blocks{16, 40};  // 9 and 6 row blocks: every rank of 2 or 3 owns some
  const PrecisionRecall distributed = precision_recall(comm(), reals, fakes, 3, blocks);
  auto one_process = dist::local_communicator(at::kCPU);
  const PrecisionRecall alone = precision_recall(*one_process, reals, fakes, 3, blocks);
  EXPECT_EQ(distributed.precision, alone.precision);  // the same blocks computed elsewhere: the same bits
  EXPECT_EQ(distributed.recall, alone.recall);
  EXPECT_GT(distributed.precision, 0.0);
  EXPECT_GT(distributed.recall, 0.0);
}

TEST(GeneratorMetricsRanks, InceptionScoreAndPathLengthEqualOneProcess) {
  const std::string directory = shared_directory();
  ASSERT_FALSE(directory.empty());
  if (comm().rank() == 0) {
    test::write_standin_inception(directory + "/inception.pt", 3);
    test::write_standin_vgg16(directory + "/vgg16.pt", 4);
  }
  comm().barrier();
  nn::GeneratorOptions g;
  g.z_dim = g.w_dim = 8;
  g.img_resolution = 16;
  g.img_channels = 1;
  g.channel_base = 64;
  g.channel_max = 8;
  g.mapping_layers = 2;
  at::manual_seed(5);  // the same network on every rank
  nn::Generator G(g);
  for (auto& [name, p] : nn::named_parameters(G)) {
    if (name.find("noise_strength") != std::string::npos) p.detach().fill_(0.5);  // the noise streams matter
  }
  auto reals = std::make_shared<data::SyntheticDataset>(16, 16, 1, 0);
  EvaluationOptions options;
  options.batch = 3;  // odd blocks: pairs of path-length samples straddle ranks
  options.show_progress = false;
  auto alone = dist::local_communicator(at::kCPU);
  for (const auto& [file, metric] : std::vector<std::pair<std::string, std::string>>{{"inception.pt", "is14"},
                                                                                     {"vgg16.pt", "ppl_wfull_11"},
                                                                                     {"vgg16.pt", "ppl2_zend_7"}}) {
    std::shared_ptr<FeatureDetector> detector = load_torchscript_detector(directory + "/" + file, at::kCPU);
    MetricEvaluator distributed(comm(), detector, reals, {}, options), one_process(*alone, detector, reals, {}, options);
    const MetricResult a = distributed.evaluate(parse_metric(metric), G);
    const MetricResult b = one_process.evaluate(parse_metric(metric), G);
    ASSERT_EQ(a.values.size(), b.values.size());
    for (size_t i = 0; i < a.values.size(); ++i) {
      EXPECT_EQ(a.values[i].second, b.values[i].second) << a.values[i].first;  // the same blocks: the same bits
    }
    EXPECT_GT(a.values[0].second, 0.0) << metric;
  }
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace sg2::metrics
