// Feature detectors loaded as the standard Inception file is, the built-in detector, and the
// evaluator on one process (the same FID twice, the real-statistics cache and its invalidation).
#include "test_support.h"

#include "sg2/data/dataset_writer.h"
#include "sg2/data/fashion_mnist.h"
#include "sg2/data/loader.h"
#include "sg2/distributed/communicator.h"
#include "sg2/metrics/builtin_detector.h"
#include "sg2/metrics/detector.h"
#include "sg2/metrics/evaluator.h"

#include <torch/script.h>

#include <fstream>
#include <sstream>

namespace sg2::metrics {
namespace {

const std::string kFashionMnist = "/usr/share/datasets/fashion-mnist";

// A TorchScript file made here with the Inception calling convention: features are the per-channel
// means of the [0, 255] input times `scale` ([N, 3]); `forward_source` replaces the default.
std::string write_scripted_detector(const std::string& path, const std::string& forward_source = "") {
  torch::jit::Module module("TestDetector");
  module.register_buffer("scale", at::tensor({1.0f, 2.0f, 3.0f}));
  module.define(forward_source.empty() ? R"(
def forward(self, images, return_features: bool = False):
    f = images.mean([2, 3]) * self.scale
    if return_features:
        return f
    return f.sum(1)
)"
                                       : forward_source);
  module.save(path);
  return path;
}

TEST(TorchScriptDetector, IsCalledWithReturnFeaturesOnFloatImages) {
  test::TempDir dir;
  auto detector = load_torchscript_detector(write_scripted_detector(dir.file("det.pt")), at::kCPU);
  EXPECT_EQ(detector->feature_dim(), 3);
  const at::Tensor rgb = at::randint(0, 256, {4, 3, 8, 8}, at::kByte);
  const at::Tensor expected = rgb.to(at::kFloat).mean({2, 3}) * at::tensor({1.0f, 2.0f, 3.0f});
  EXPECT_TRUE(at::allclose(detector->features(rgb), expected));
  const at::Tensor gray = at::randint(0, 256, {2, 1, 8, 8}, at::kByte);  // repeated to 3 channels
  const at::Tensor gray_mean = gray.to(at::kFloat).mean({1, 2, 3});
  EXPECT_TRUE(at::allclose(detector->features(gray), at::outer(gray_mean, at::tensor({1.0f, 2.0f, 3.0f}))));
  EXPECT_NE(detector->identity().find("crc32c"), std::string::npos);
}

TEST(TorchScriptDetector, BadFilesAndBadOutputsGiveErrorsNamingTheFile) {
  test::TempDir dir;
  EXPECT_NE(test::error_message([&] { load_torchscript_detector(dir.file("missing.pt"), at::kCPU); }).find("does not exist"),
            std::string::npos);
  std::ofstream(dir.file("corrupt.pt")) << "this is not a zip archive";
  const std::string corrupt = test::error_message([&] { load_torchscript_detector(dir.file("corrupt.pt"), at::kCPU); });
  EXPECT_NE(corrupt.find("corrupt.pt"), std::string::npos) << corrupt;
  EXPECT_NE(corrupt.find("not a loadable TorchScript"), std::string::npos) << corrupt;

  const std::string flat = write_scripted_detector(dir.file("flat.pt"), R"(
def forward(self, images, return_features: bool = False):
    return images.mean([1, 2, 3])
)");
  const std::string shape = test::error_message([&] { load_torchscript_detector(flat, at::kCPU); });
  EXPECT_NE(shape.find("flat.pt"), std::string::npos) << shape;
  EXPECT_NE(shape.find("expected [2, D]"), std::string::npos) << shape;

  const std::string no_kwarg = write_scripted_detector(dir.file("nokwarg.pt"), R"(
def forward(self, images):
    return images.mean([2, 3])
)");
  const std::string call = test::error_message([&] { load_torchscript_detector(no_kwarg, at::kCPU); });
  EXPECT_NE(call.find("return_features=True"), std::string::npos) << call;
}

TEST(BuiltinDetector, LearnsFashionMnistAndLoadsAsATorchScriptDetector) {
  test::TempDir dir;
  const data::FashionMnistDataset train(kFashionMnist, "train", true, 0);
  const data::FashionMnistDataset heldout(kFashionMnist, "test", true, 2000);
  DetectorTrainingOptions options;
  options.epochs = 1;
  options.max_images = 4000;
  const auto result = train_builtin_detector(train, &heldout, options, dir.file("builtin.pt"));
  EXPECT_GT(result.heldout_accuracy, 0.5);  // chance is 0.1
  auto detector = load_torchscript_detector(dir.file("builtin.pt"), at::kCPU);
  EXPECT_EQ(detector->feature_dim(), 128);
  // Any image size and channel count goes through (resized to 32x32, RGB averaged to gray).
  EXPECT_EQ(detector->features(at::zeros({3, 3, 299, 299}, at::kByte)).sizes(), at::IntArrayRef({3, 128}));
}

// A small ZIP dataset of Fashion-MNIST images of `split`.
std::shared_ptr<data::Dataset> write_zip(const std::string& path, const std::string& split) {
  data::write_zip_dataset(data::FashionMnistDataset(kFashionMnist, split, false, 96), path, data::WriteOptions{});
  data::DatasetOptions options;
  options.path = path;
  return data::open_dataset(options);
}

// The scripted detector on one process, with real statistics cached in a fresh directory.
class RealStatisticsCache : public ::testing::Test {
 protected:
  RealStatisticsCache() {
    options.batch = 20;
    options.cache_dir = dir.file("cache");
    options.show_progress = false;
  }
  // The mean of the real features, as the evaluator computes or reads them.
  at::Tensor real_mean(const std::shared_ptr<data::Dataset>& dataset, const std::string& path) {
    MetricEvaluator evaluator(*comm, detector, dataset, dataset_identity(path, *dataset), options);
    return evaluator.real_stats(0, false).mean();
  }
  // The mean of the dataset's own features, computed here.
  at::Tensor own_mean(const data::Dataset& dataset) const {
    const at::Tensor images = data::read_images(dataset, data::index_range(0, dataset.size()));
    return detector->features(images).to(at::kDouble).mean(0);
  }
  int64_t cache_files() const { return std::distance(std::filesystem::directory_iterator(options.cache_dir), {}); }

  test::TempDir dir;
  std::unique_ptr<dist::Communicator> comm = dist::local_communicator(at::kCPU);
  std::shared_ptr<FeatureDetector> detector = load_torchscript_detector(write_scripted_detector(dir.file("d.pt")), at::kCPU);
  EvaluationOptions options;
};

TEST_F(RealStatisticsCache, IsReadBackAndRecomputedWhenTheDatasetChanges) {
  const std::string zip = dir.file("data.zip");
  const auto reals = write_zip(zip, "train");
  const at::Tensor first = real_mean(reals, zip);
  ASSERT_EQ(cache_files(), 1);
  const auto cache_file = std::filesystem::directory_iterator(options.cache_dir)->path();
  const auto written = std::filesystem::last_write_time(cache_file);
  EXPECT_TRUE(at::equal(real_mean(reals, zip), first));  // from the cache: the file is not rewritten
  EXPECT_EQ(std::filesystem::last_write_time(cache_file), written);

  auto changed = write_zip(zip, "test");  // same path, same size, other images
  const at::Tensor recomputed = real_mean(changed, zip);
  EXPECT_FALSE(at::allclose(recomputed, first));
  EXPECT_NE(std::filesystem::last_write_time(cache_file), written);
  EXPECT_TRUE(at::allclose(recomputed, own_mean(*changed), 1e-9, 1e-9));  // the dataset's own statistics
}

// Another detector written to the same file (its checksum is in the key): the statistics are computed
// again with it, not read back.
TEST_F(RealStatisticsCache, IsRecomputedWhenTheDetectorFileChanges) {
  const std::string zip = dir.file("data.zip");
  const auto reals = write_zip(zip, "train");
  const at::Tensor first = real_mean(reals, zip);
  detector = load_torchscript_detector(write_scripted_detector(dir.file("d.pt"), R"(
def forward(self, images, return_features: bool = False):
    return images.amax([2, 3]) * self.scale
)"),
                                       at::kCPU);
  const at::Tensor second = real_mean(reals, zip);
  EXPECT_FALSE(at::allclose(second, first));
  EXPECT_TRUE(at::allclose(second, own_mean(*reals), 1e-9, 1e-9));
}

// Two splits of one Fashion-MNIST directory share the path, size, shape and files; each keeps
// its own cached statistics all the same.
TEST_F(RealStatisticsCache, KeepsFashionMnistSplitsApart) {
  for (int pass = 0; pass < 2; ++pass) {  // the second pass reads both from the cache
    for (const std::string split : {"train", "test"}) {
      auto reals = std::make_shared<data::FashionMnistDataset>(kFashionMnist, split, false, 96);
      EXPECT_TRUE(at::allclose(real_mean(reals, kFashionMnist), own_mean(*reals), 1e-9, 1e-9)) << split << ", " << pass;
    }
  }
  EXPECT_EQ(cache_files(), 2);
}

}  // namespace
}  // namespace sg2::metrics
