// Adam against LibTorch's own torch::optim::Adam and the closed form, the lazy-regularization
// correction, gradient sanitising and the EMA.
#include "sg2/core/error.h"
#include "sg2/train/optim.h"
#include "test_support.h"

#include <torch/cuda.h>
#include <torch/optim/adam.h>

namespace sg2::train {
namespace {

TEST(Adam, MatchesLibTorchAdamOverSeveralSteps) {
  at::manual_seed(0);
  at::Tensor ours = at::randn({5, 3}).requires_grad_(true);
  at::Tensor theirs = ours.detach().clone().requires_grad_(true);
  AdamOptions o{{0.5, 0.99, 1e-8}, 0.01};
  Adam adam({{"p", ours}}, o);
  torch::optim::Adam reference({theirs}, torch::optim::AdamOptions(0.01).betas({0.5, 0.99}).eps(1e-8));
  for (int step = 0; step < 5; ++step) {
    const at::Tensor grad = at::randn({5, 3});
    ours.mutable_grad() = grad.clone();
    theirs.mutable_grad() = grad.clone();
    adam.step();
    reference.step();
  }
  EXPECT_LT((ours - theirs).abs().max().item<double>(), 1e-7);
}

TEST(Adam, ClosedFormWithBeta1Zero) {
  at::Tensor p = at::zeros({2}).requires_grad_(true);
  Adam adam({{"p", p}}, AdamOptions{{0.0, 0.99, 1e-8}, 0.1});
  p.mutable_grad() = at::tensor({3.0f, -0.5f});
  adam.step();  // m = g, v = 0.01 g^2, v_hat = g^2: step = -lr g / (|g| + eps)
  EXPECT_NEAR(p[0].item<double>(), -0.1, 1e-6);
  EXPECT_NEAR(p[1].item<double>(), 0.1, 1e-6);
  p.mutable_grad() = at::tensor({1.0f, 1.0f});
  adam.step();  // v = 0.99 * 0.01 * g1^2 + 0.01 * g2^2, bias correction 1 - 0.99^2
  const double v0 = (0.99 * 0.01 * 9.0 + 0.01 * 1.0) / (1 - 0.99 * 0.99);
  EXPECT_NEAR(p[0].item<double>(), -0.1 - 0.1 / (std::sqrt(v0) + 1e-8), 1e-6);
}

TEST(Adam, SkipsParametersWithoutGradientAndRoundTripsState) {
  at::Tensor a = at::ones({2}).requires_grad_(true), b = at::ones({2}).requires_grad_(true);
  Adam adam({{"a", a}, {"b", b}}, AdamOptions{});
  a.mutable_grad() = at::ones({2});
  adam.step();
  EXPECT_TRUE(b.equal(at::ones({2})));
  nn::TensorMap state;
  for (const auto& [k, v] : adam.state("opt.")) state[k] = v.clone();
  EXPECT_EQ(state.at("opt.a.step").item<int64_t>(), 1);
  EXPECT_EQ(state.at("opt.b.step").item<int64_t>(), 0);
  Adam restored({{"a", a}, {"b", b}}, AdamOptions{});
  restored.load_state(state, "opt.", "test");
  EXPECT_TRUE(restored.state("opt.")[1].second.equal(state.at("opt.a.exp_avg_sq")));
  state.erase("opt.b.exp_avg");
  EXPECT_THROW(restored.load_state(state, "opt.", "test"), Error);
}

TEST(LazyRegularization, CorrectsLearningRateAndBetas) {
  const AdamOptions d = lazy_regularization(AdamOptions{{0.0, 0.99, 1e-8}, 0.002}, 16);
  EXPECT_NEAR(d.lr, 0.0018823529411764706, 1e-15);
  EXPECT_NEAR(d.beta2, 0.9905854573074332, 1e-15);
  EXPECT_EQ(d.beta1, 0.0);
  const AdamOptions g = lazy_regularization(AdamOptions{{0.0, 0.99, 1e-8}, 0.002}, 4);
  EXPECT_NEAR(g.lr, 0.0016, 1e-15);
  EXPECT_NEAR(g.beta2, 0.9919919678228657, 1e-15);
  EXPECT_EQ(lazy_regularization(AdamOptions{}, 0).lr, AdamOptions{}.lr);
}

TEST(Ema, BetaFromHalfLifeAndRampup) {
  EXPECT_NEAR(ema_beta(32, 10, 0, 1000000), 0.9977843871238888, 1e-15);
  EXPECT_NEAR(ema_beta(32, 10, 0.05, 1000), 0.6417129487814521, 1e-15);  // ramp-up: 1000 * 0.05 images
}

// On the CPU, and on a GPU where there is one (LibTorch 2.x: its multi-tensor kernels there).
TEST(Ema, LerpsParametersAndCopiesBuffers) {
  struct Net : torch::nn::Module {
    at::Tensor w, b, buf, count;
    explicit Net(const at::Device& device) {
      w = register_parameter("w", at::randn({3, 2}, device));
      b = register_parameter("b", at::randn({5}, device));
      buf = register_buffer("buf", at::randn({1}, device));
      count = register_buffer("count", at::randint(100, {2}, at::TensorOptions(device).dtype(at::kLong)));
    }
  };
  std::vector<at::Device> devices{at::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(at::kCUDA);
  for (const at::Device& device : devices) {
    for (const double beta : {0.75, 0.25, 0.0}) {  // lerp's two branches (weight >= 0.5 or not); 0 at the start
      Net ema(device), current(device);
      const at::Tensor w_before = ema.w.detach().clone(), b_before = ema.b.detach().clone();
      update_ema(ema, current, beta);
      // The reference's p.lerp(p_ema, beta), bit for bit, whichever path LibTorch takes.
      EXPECT_TRUE(ema.w.equal(current.w.detach().lerp(w_before, beta))) << device << " beta " << beta;
      EXPECT_TRUE(ema.b.equal(current.b.detach().lerp(b_before, beta))) << device << " beta " << beta;
      EXPECT_TRUE(ema.buf.equal(current.buf)) << device;
      EXPECT_TRUE(ema.count.equal(current.count)) << device;
    }
  }
}

TEST(SanitizeGradients, ReplacesNanAndInfInPlace) {
  at::Tensor flat = at::tensor({NAN, INFINITY, -INFINITY, 2.5f});
  at::Tensor view = flat.narrow(0, 1, 2);  // a parameter's .grad is a view of its bucket
  sanitize_gradients(flat);
  EXPECT_TRUE(flat.equal(at::tensor({0.0f, 1e5f, -1e5f, 2.5f})));
  EXPECT_TRUE(view.equal(at::tensor({1e5f, -1e5f})));
}

}  // namespace
}  // namespace sg2::train
