// The augmentation pipeline (sg2/train/augment.h) against the reference's AugmentPipe: every op alone
// and the pipelines bgc and bgcfnc, on RGB and one-channel images, outputs and gradients, from the
// reference's own random draws (tests/fixtures/augment, written by scripts/make_augment_fixture.py,
// whose docstring says how the draws are fixed); and the second order that R1 takes through the
// geometric transform.
#include "sg2/nn/state_dict.h"
#include "sg2/train/augment.h"
#include "test_support.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <filesystem>
#include <fstream>

namespace sg2::train {
namespace {

namespace fs = std::filesystem;

// The draws of a fixture in their order; a draw of another kind or shape, or one too many, is an
// error naming it.
class RecordedDraws : public AugmentDraws {
 public:
  RecordedDraws(const nn::TensorMap& tensors, const nlohmann::json& kinds) : tensors_(tensors), kinds_(kinds) {}
  at::Tensor rand(at::IntArrayRef shape, const at::Device& device) override { return next("rand", shape, device); }
  at::Tensor randn(at::IntArrayRef shape, const at::Device& device) override { return next("randn", shape, device); }
  size_t used() const { return next_; }

 private:
  at::Tensor next(const std::string& kind, at::IntArrayRef shape, const at::Device& device) {
    SG2_CHECK(next_ < kinds_.size(), "draw {} ({} {}): the reference drew only {}", next_, kind, shape, kinds_.size());
    const std::string expected = kinds_[next_].at("kind");
    const at::Tensor draw = tensors_.at(fmt::format("draw.{:03d}", next_));
    SG2_CHECK(expected == kind && draw.sizes() == shape, "draw {}: {} {} where the reference drew {} {}", next_, kind,
              shape, expected, draw.sizes());
    ++next_;
    return draw.to(device);
  }

  const nn::TensorMap& tensors_;
  const nlohmann::json& kinds_;
  size_t next_ = 0;
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream file(path);
  return nlohmann::json::parse(file);
}

AugmentOptions options_of(const nlohmann::json& multipliers) {
  AugmentOptions o;
  const std::map<std::string, double*> fields{
      {"xflip", &o.xflip},       {"rotate90", &o.rotate90},     {"xint", &o.xint},
      {"scale", &o.scale},       {"rotate", &o.rotate},         {"aniso", &o.aniso},
      {"xfrac", &o.xfrac},       {"brightness", &o.brightness}, {"contrast", &o.contrast},
      {"lumaflip", &o.lumaflip}, {"hue", &o.hue},               {"saturation", &o.saturation},
      {"imgfilter", &o.imgfilter}, {"noise", &o.noise},         {"cutout", &o.cutout}};
  for (const auto& [name, value] : multipliers.items()) *fields.at(name) = value.get<double>();
  return o;
}

// g = sin(0.37 i) over the elements in order (the fixture's weight of the output).
at::Tensor output_weight(at::IntArrayRef shape) {
  int64_t count = 1;
  for (const int64_t size : shape) count *= size;
  return (at::arange(count, at::kFloat) * 0.37f).sin().reshape(shape);
}

double relative_error(const at::Tensor& ours, const at::Tensor& reference) {
  const double scale = std::max(reference.abs().max().item<double>(), 1e-12);
  return (ours.to(at::kDouble) - reference.to(at::kDouble)).abs().max().item<double>() / scale;
}

std::vector<fs::path> fixtures() {
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(fs::path(test::source_dir()) / "tests/fixtures/augment")) {
    if (entry.path().extension() == ".pt") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Every fixture run on `device` (the recorded draws and the images moved there), compared on the CPU.
void expect_every_fixture_matches_on(const at::Device& device) {
  const std::vector<fs::path> paths = fixtures();
  ASSERT_EQ(paths.size(), 32u);  // 15 ops and 2 pipelines, RGB and one channel (hue, saturation: RGB only)
  for (const fs::path& path : paths) {
    const std::string name = path.stem().string();
    const nn::TensorMap tensors = nn::load_tensor_file(path.string());
    const nlohmann::json meta = read_json(fs::path(path).replace_extension(".json").string());
    AugmentPipe pipe(options_of(meta.at("options")));
    pipe.to(device);
    RecordedDraws draws(tensors, meta.at("draws"));
    const at::Tensor images = tensors.at("images").to(device).requires_grad_(true);
    const at::Tensor out = pipe(images, meta.at("p").get<double>(), draws);
    EXPECT_EQ(draws.used(), meta.at("draws").size()) << name;
    const at::Tensor weight = output_weight(out.sizes()).to(device);
    const at::Tensor grad = torch::autograd::grad({(out * weight).sum()}, {images})[0];
    EXPECT_LT(relative_error(out.detach().cpu(), tensors.at("out")), 1e-4) << name << ": output";
    EXPECT_LT(relative_error(grad.cpu(), tensors.at("grad")), 1e-4) << name << ": gradient";
  }
}

TEST(Augment, EveryOpAndPipelineMatchesTheReferenceForwardAndGradient) { expect_every_fixture_matches_on(at::kCPU); }

// On CUDA (TF32 off, as run.allow_tf32 false) the pipeline resamples through the project's upfirdn2d kernels and LibTorch's grid sampler.
TEST(Augment, OnTheGpuEveryOpAndPipelineMatchesTheReference) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  at::globalContext().setAllowTF32CuDNN(false);  // float32 convolutions, as training runs them by default
  expect_every_fixture_matches_on(at::Device(at::kCUDA, 0));
}

TEST(Augment, PipelinesByName) {
  const AugmentOptions bgc = augment_pipeline("bgc");
  EXPECT_EQ(bgc.xflip, 1);
  EXPECT_EQ(bgc.xfrac, 1);
  EXPECT_EQ(bgc.saturation, 1);
  EXPECT_EQ(bgc.imgfilter, 0);
  EXPECT_EQ(augment_pipeline("bgcfnc").cutout, 1);
  EXPECT_EQ(augment_pipeline("filter").imgfilter, 1);
  EXPECT_EQ(augment_pipeline("filter").xflip, 0);
  const std::string message = test::error_message([] { augment_pipeline("bgz"); });
  EXPECT_NE(message.find("unknown augmentation pipeline 'bgz' (expected blit, geom"), std::string::npos) << message;
}

// The geometric transform A is linear in the images, so for y = A x the recorded gradient
// dx = A^T w of a weight w is linear in w, and d<dx, u>/dw = A u: the same transform of u. This is
// the second order R1 takes through the augmentation (its gradient of D's gradient by the images).
TEST(Augment, TheGeometricTransformsGradientIsDifferentiableAgain) {
  AugmentOptions geom = augment_pipeline("bg");
  const AugmentPipe pipe(geom);
  at::manual_seed(31);
  const at::Tensor x = at::randn({2, 3, 24, 24}).requires_grad_(true), u = at::randn({2, 3, 24, 24});
  const auto draws = [] { return GeneratorDraws(at::make_generator<at::CPUGeneratorImpl>(7)); };
  auto first = draws(), second = draws();
  const at::Tensor y = pipe(x, 1.0, first);
  const at::Tensor w = at::randn(y.sizes()).requires_grad_(true);
  const at::Tensor dx = torch::autograd::grad({(y * w).sum()}, {x}, {}, true, /*create_graph=*/true)[0];
  const at::Tensor dw = torch::autograd::grad({(dx * u).sum()}, {w})[0];
  const at::Tensor transformed_u = pipe(u, 1.0, second);  // the same draws: the same transform
  EXPECT_LT(relative_error(dw, transformed_u.detach()), 1e-5);
}

TEST(Augment, RefusesImagesOfOtherChannelCountsOrAnotherDevice) {
  const AugmentPipe pipe(augment_pipeline("bgc"));
  GeneratorDraws draws(at::make_generator<at::CPUGeneratorImpl>(1));
  const std::string message = test::error_message([&] { pipe(at::zeros({2, 4, 24, 24}), 0.5, draws); });
  EXPECT_NE(message.find("expected images [N, 1 or 3, H, W], got [2, 4, 24, 24]"), std::string::npos) << message;
  const std::string elsewhere = test::error_message([&] { pipe(at::zeros({2, 3, 24, 24}, at::kMeta), 0.5, draws); });
  EXPECT_NE(elsewhere.find("images on meta, the pipeline's filters on cpu: move the pipeline with to()"),
            std::string::npos)
      << elsewhere;
}

}  // namespace
}  // namespace sg2::train
