// The discriminator's main phase: its fakes and reals in one pass of D (Discriminator::forward_pair),
// with the logits, statistics and gradients of the reference's two passes.
#include "sg2/nn/layers.h"
#include "sg2/train/loss.h"
#include "sg2/train/trainer.h"
#include "recorded_ops.h"
#include "tiny_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace sg2::train {
namespace {

// The passes of D among recorded convolutions: those of its first layer, fromrgb, whose weight
// [C, image channels, 1, 1] no other convolution of G or D has (G's toRGB weights are [image
// channels, C, 1, 1]).
size_t passes_of_d(const std::vector<test::OpCall>& convolutions, int64_t image_channels) {
  return std::count_if(convolutions.begin(), convolutions.end(), [&](const test::OpCall& call) {
    const at::Tensor w = call.inputs.at(1).toTensor();
    return w.dim() == 4 && w.size(1) == image_channels && w.size(2) == 1 && w.size(3) == 1;
  });
}

std::vector<at::Tensor> gradients_of(nn::Discriminator& D) {
  std::vector<at::Tensor> grads;
  for (auto& p : D.parameters()) {
    grads.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
    p.mutable_grad() = at::Tensor();
  }
  return grads;
}

// Random one-hot labels [n, c_dim] ([n, 0] unconditional).
at::Tensor random_labels(int64_t n, int64_t c_dim) {
  if (c_dim == 0) return at::zeros({n, 0});
  return at::one_hot(at::randint(c_dim, {n}), c_dim).to(at::kFloat);
}

class DiscriminatorMainPhase : public ::testing::TestWithParam<bool> {};  // with the dataset's labels

TEST_P(DiscriminatorMainPhase, RunsOnePassWithTheLogitsAndGradientsOfTwo) {
  TrainConfig c = test::tiny_config();
  c.data.use_labels = GetParam();
  const at::Device cpu(at::kCPU);
  Trainer trainer(c, open_configured_dataset(c), cpu);
  nn::Discriminator& D = trainer.D();
  for (auto& p : trainer.G().parameters()) p.requires_grad_(false);  // as in D's phases
  for (auto& p : D.parameters()) p.requires_grad_(true);
  StyleGAN2Loss loss(trainer.G(), D, c.loss, cpu);
  const int64_t n = 8, r = D.options.img_resolution;
  at::manual_seed(4);
  RoundInputs in;
  in.real_img = at::rand({n, D.options.img_channels, r, r}) * 2 - 1;
  in.real_c = random_labels(n, D.options.c_dim);
  in.gen_z = at::randn({n, trainer.G().options.z_dim});
  in.gen_c = random_labels(n, D.options.c_dim);
  ASSERT_EQ(D.options.c_dim, GetParam() ? 10 : 0);  // Fashion-MNIST's 10 classes

  StatsCollector stats;
  at::Generator rng = nn::make_rng(cpu, 11);
  test::RecordedOps recorded({"aten::_convolution"});
  loss.accumulate_gradients(Phase::Dmain, in, 1.0, rng, stats);
  EXPECT_EQ(passes_of_d(recorded.take(), D.options.img_channels), 1u);  // one pass for fakes and reals
  const std::vector<at::Tensor> one_pass = gradients_of(D);
  const auto moments = stats.finish();

  // The reference's two passes, with the same draws for G.
  at::Generator same_draws = nn::make_rng(cpu, 11);
  at::Tensor fakes;
  {
    at::NoGradGuard no_grad;
    fakes = loss.run_G(in.gen_z, in.gen_c, same_draws).first;
  }
  const at::Tensor fake_logits = D.forward(fakes, in.gen_c), real_logits = D.forward(in.real_img, in.real_c);
  EXPECT_EQ(passes_of_d(recorded.take(), D.options.img_channels), 2u);
  (at::softplus(fake_logits).mean() + (real_logits * 0 + softplus_neg(real_logits)).mean()).backward();
  const std::vector<at::Tensor> two_passes = gradients_of(D);

  EXPECT_NEAR(moments.at("Loss/scores/fake").mean, fake_logits.mean().item<double>(), 1e-5);
  EXPECT_NEAR(moments.at("Loss/scores/real").mean, real_logits.mean().item<double>(), 1e-5);
  ASSERT_EQ(one_pass.size(), two_passes.size());
  for (size_t i = 0; i < one_pass.size(); ++i) {
    EXPECT_TRUE(at::allclose(one_pass[i], two_passes[i], 1e-4, 1e-6))
        << "parameter " << i << " " << one_pass[i].sizes() << ": max difference "
        << (one_pass[i] - two_passes[i]).abs().max().item<double>();
  }
  EXPECT_GT(one_pass.back().abs().sum().item<double>(), 0);  // the output layer's bias has a gradient
}

INSTANTIATE_TEST_SUITE_P(Loss, DiscriminatorMainPhase, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Conditional" : "Unconditional"; });

}  // namespace
}  // namespace sg2::train
