// Every CPU-level clone of the hand-written kernels (sg2/core/cpu_level.h), forced in turn, against
// the reference ops at the shapes the networks use: outputs, first and second derivatives. And kink
// pinning, which the parity check of the kernels relies on.
#include "sg2/core/cpu_level.h"
#include "kink_pinning.h"
#include "sg2/ops/ops.h"
#include "ops_test_support.h"
#include "test_support.h"

#include <torch/csrc/autograd/autograd.h>

#include <functional>

namespace sg2::ops {
namespace {

using test::LevelGuard;
using test::max_relative_error;

// An op of the networks: y = op(x, w) under a kernel choice; w may be undefined (pure FIR).
struct NetworkOp {
  std::string name;
  std::vector<int64_t> x_shape, w_shape;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&, Kernel)> apply;
};

std::vector<NetworkOp> network_ops() {
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  auto conv = [f](int64_t up, int64_t down, int64_t padding, bool flip_weight) {
    return [=](const at::Tensor& x, const at::Tensor& w, Kernel kernel) {
      ops::ConvResampleParams p;
      p.up = up;
      p.down = down;
      p.padding = {padding, padding, padding, padding};
      p.flip_weight = flip_weight;
      return ops::conv2d_resample(x, w, f, p, kernel);
    };
  };
  std::vector<NetworkOp> cases;
  for (int64_t r : {4, 8, 32}) {
    const std::string at = " at " + std::to_string(r);
    cases.push_back({"G skip upsample2d" + at, {2, 3, r, r}, {}, [f](const at::Tensor& x, const at::Tensor&, Kernel kernel) {
                       return ops::upsample2d(x, f, 2, kernel);
                     }});
    cases.push_back({"D downsample2d" + at, {2, 8, r, r}, {}, [f](const at::Tensor& x, const at::Tensor&, Kernel kernel) {
                       return ops::downsample2d(x, f, 2, kernel);
                     }});
    cases.push_back({"G conv0 (3x3, up 2)" + at, {2, 8, r, r}, {6, 8, 3, 3}, conv(2, 1, 1, false)});
    cases.push_back({"D conv1 (3x3, down 2)" + at, {2, 8, r, r}, {6, 8, 3, 3}, conv(1, 2, 1, true)});
    cases.push_back({"D skip (1x1, down 2)" + at, {2, 8, r, r}, {6, 8, 1, 1}, conv(1, 2, 0, true)});
  }
  // bias_act, w the bias: planes of 25 (no whole number of vectors), channels_last pixels of 6, and
  // fully connected rows of 7, clamped as float16 layers are.
  ops::BiasActParams lrelu;
  lrelu.act = ops::Activation::LRelu;
  lrelu.clamp = 2.5;
  const auto bias_act = [lrelu](at::MemoryFormat layout) {
    return [=](const at::Tensor& x, const at::Tensor& b, Kernel kernel) {
      return ops::bias_act(x.contiguous(layout), b, lrelu, kernel);
    };
  };
  cases.push_back({"bias_act NCHW", {2, 8, 5, 5}, {8}, bias_act(at::MemoryFormat::Contiguous)});
  cases.push_back({"bias_act channels_last", {2, 6, 3, 5}, {6}, bias_act(at::MemoryFormat::ChannelsLast)});
  cases.push_back({"bias_act fully connected", {3, 7}, {7}, bias_act(at::MemoryFormat::Contiguous)});
  return cases;
}

// Output, dL/dx, dL/dw and the second-order d((dL/dx . v))/d(x, w) for L = sum(op(x^2, w) * g).
std::vector<at::Tensor> network_op_derivatives(const NetworkOp& op, const at::Tensor& x0, const at::Tensor& w0,
                                               Kernel kernel) {
  at::Tensor x = x0.clone().requires_grad_(true);
  at::Tensor w = w0.defined() ? w0.clone().requires_grad_(true) : at::Tensor();
  at::Tensor y = op.apply(x.square(), w, kernel);
  at::manual_seed(11);
  const at::Tensor g = at::randn(y.sizes()), v = at::randn(x0.sizes());
  std::vector<at::Tensor> inputs{x};
  if (w.defined()) inputs.push_back(w);
  auto first = torch::autograd::grad({(y * g).sum()}, inputs, {}, /*retain_graph=*/true, /*create_graph=*/true);
  auto second = torch::autograd::grad({(first[0] * v).sum()}, inputs, {}, /*retain_graph=*/false,
                                      /*create_graph=*/false, /*allow_unused=*/true);
  std::vector<at::Tensor> out{y.detach()};
  for (const auto& t : first) out.push_back(t.detach());
  for (const auto& t : second) {
    if (t.defined()) out.push_back(t);
  }
  return out;
}

TEST(KernelsPerCpuLevel, EveryCloneMatchesTheReferenceToSecondOrderAtNetworkShapes) {
  LevelGuard guard;
  const std::vector<cpu::Level> levels = cpu::supported_levels();
  std::cout << "CPU levels tested: ";
  for (auto level : levels) std::cout << cpu::to_string(level) << " ";
  std::cout << "(best supported: " << cpu::to_string(cpu::best_supported_level()) << ")\n";
  for (const NetworkOp& op : network_ops()) {
    at::manual_seed(5);
    const at::Tensor x0 = at::randn(op.x_shape);
    const at::Tensor w0 = op.w_shape.empty() ? at::Tensor() : at::randn(op.w_shape);
    const auto reference = network_op_derivatives(op, x0, w0, Kernel::Reference);
    for (cpu::Level level : levels) {
      cpu::force_cpu_level(level);
      const auto kernel = network_op_derivatives(op, x0, w0, Kernel::Auto);
      ASSERT_EQ(kernel.size(), reference.size()) << op.name;
      for (size_t i = 0; i < kernel.size(); ++i) {
        EXPECT_LT(max_relative_error(kernel[i], reference[i]), 2e-5)
            << op.name << ", " << cpu::to_string(level) << ", derivative output " << i;
      }
    }
  }
}

TEST(KernelsPerCpuLevel, LevelNamesParseAndOthersAreRefused) {
  EXPECT_EQ(cpu::parse_level("baseline"), cpu::Level::Baseline);
  EXPECT_EQ(cpu::parse_level("avx2"), cpu::Level::Avx2);
  EXPECT_EQ(cpu::parse_level("avx512"), cpu::Level::Avx512);
  EXPECT_THROW(cpu::parse_level("sse9"), std::exception);
}

TEST(KernelsPerCpuLevel, ForcingAnUnsupportedLevelFailsAndNamesTheBest) {
  LevelGuard guard;
  if (cpu::best_supported_level() == cpu::Level::Avx512) GTEST_SKIP() << "this CPU supports every level";
  const std::string message = sg2::test::error_message([] { cpu::force_cpu_level(cpu::Level::Avx512); });
  EXPECT_NE(message.find("CPU level avx512 forced, but this CPU supports at most " +
                         cpu::to_string(cpu::best_supported_level())),
            std::string::npos)
      << message;
  EXPECT_EQ(cpu::cpu_level(), guard.saved);  // unchanged
}

TEST(KinkPinning, ReplayGivesNearZeroPreActivationsTheRecordedSideWithIdentityGradient) {
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  // Recorded: the reference run saw +1e-7 (slope 1) and -2e-7 (slope 0.2) at the kink.
  const at::Tensor recorded = at::tensor({2.0f, 1e-7f, -2e-7f, -3.0f}).reshape({1, 4});
  sg2::test::KinkPins pins;
  ComputeSettings compute;
  compute.pre_activation = pins.recorder();
  ops::bias_act(recorded, at::Tensor(), p, compute);
  // Replayed: rounding put both ties on the other side, and one clear value changed sign (no tie).
  at::Tensor x = at::tensor({2.0f, -1e-7f, 2e-7f, 3.0f}).reshape({1, 4}).requires_grad_(true);
  compute.pre_activation = pins.replayer(1e-6);
  at::Tensor y = ops::bias_act(x, at::Tensor(), p, compute);
  y.sum().backward();
  EXPECT_EQ(pins.pinned_count(), 2);
  const double gain = std::sqrt(2.0);
  const at::Tensor expected_grad = at::tensor({1.0, 1.0, 0.2, 1.0}) * gain;  // recorded slopes at the ties
  EXPECT_LT((x.grad().to(at::kDouble).flatten() - expected_grad).abs().max().item<double>(), 1e-6);
  EXPECT_GT(y[0][1].item<float>(), 0.0f);
  EXPECT_LT(y[0][2].item<float>(), 0.0f);
  EXPECT_NEAR(y[0][3].item<float>(), 3.0 * gain, 1e-5);  // far from the kink: untouched
  // Without the hook, the same call takes the side its own arithmetic gives.
  EXPECT_LT(ops::bias_act(x.detach(), at::Tensor(), p)[0][1].item<float>(), 0.0f);
}

TEST(KinkPinning, ReplayOfAnotherShapeIsAnError) {
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  sg2::test::KinkPins pins;
  ComputeSettings compute;
  compute.pre_activation = pins.recorder();
  ops::bias_act(at::ones({2, 3}), at::Tensor(), p, compute);
  compute.pre_activation = pins.replayer();
  EXPECT_THROW(ops::bias_act(at::ones({3, 2}), at::Tensor(), p, compute), std::exception);
}

}  // namespace
}  // namespace sg2::ops
