// The ops against independent definitions, and the hand-written kernels against the references.
#include "sg2/ops/kernels.h"
#include "sg2/ops/ops.h"
#include "bias_act_autograd.h"
#include "ops_test_support.h"
#include "recorded_ops.h"
#include "test_support.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <cmath>
#include <limits>
#include <tuple>

namespace sg2::ops {
namespace {

using kernels::ActivationParams;
using kernels::bias_act_gradient_with_bias_sums;
using kernels::differentiable_bias_act_gradient;
using kernels::resolve;
using test::asymmetric_filter;
using test::fir_cases;
using test::max_relative_error;
using test::upfirdn2d_direct;

TEST(Upfirdn2d, ReferenceAndKernelMatchTheDefinition) {
  at::manual_seed(0);
  const at::Tensor x = at::randn({2, 3, 7, 6});
  for (const at::Tensor& f : {ops::setup_filter({1, 3, 3, 1}), asymmetric_filter()}) {
    for (const auto& p : fir_cases()) {
      const at::Tensor expected = upfirdn2d_direct(x, f, p);
      EXPECT_LT(max_relative_error(ops::upfirdn2d_reference(x, f, p), expected), 1e-6) << "up " << p.up << " down " << p.down;
      EXPECT_LT(max_relative_error(kernels::upfirdn2d_forward(x, f, p), expected), 1e-6) << "up " << p.up << " down " << p.down;
    }
  }
}

TEST(Upfirdn2d, KernelGradientIsTheAdjoint) {
  // <A x, y> == <x, A^T y> where A^T y is the kernel's backward.
  at::manual_seed(1);
  const at::Tensor f = asymmetric_filter();
  for (const auto& p : fir_cases()) {
    at::Tensor x = at::randn({2, 2, 9, 8}, at::kDouble).to(at::kFloat).requires_grad_(true);
    const at::Tensor out = kernels::upfirdn2d(x, f, p);
    const at::Tensor y = at::randn(out.sizes());
    const at::Tensor grad = torch::autograd::grad({(out * y).sum()}, {x})[0];
    const double lhs = (out.to(at::kDouble) * y.to(at::kDouble)).sum().item<double>();
    const double rhs = (x.detach().to(at::kDouble) * grad.to(at::kDouble)).sum().item<double>();
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs) + 1e-4) << "up " << p.up << " down " << p.down;
    EXPECT_EQ(grad.sizes(), x.sizes());
  }
}

TEST(Upfirdn2d, KernelSecondOrderGradientMatchesReference) {
  at::manual_seed(2);
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const ops::FirParams p{1, 2, {1, 1, 1, 1}, false, 1.0};
  const at::Tensor x0 = at::randn({2, 3, 8, 8}), w = at::randn({2, 3, 4, 4}), v = at::randn({2, 3, 8, 8});
  auto second_order = [&](ops::Kernel impl) {
    at::Tensor x = x0.clone().requires_grad_(true);
    at::Tensor loss = (ops::upfirdn2d(x.square(), f, p, impl) * w).sum();
    at::Tensor g = torch::autograd::grad({loss}, {x}, {}, true, true)[0];
    at::Tensor gg = torch::autograd::grad({(g * v).sum()}, {x})[0];
    return std::make_pair(g.detach(), gg);
  };
  const auto kernel = second_order(ops::Kernel::Auto), reference = second_order(ops::Kernel::Reference);
  EXPECT_LT(max_relative_error(kernel.first, reference.first), 1e-5);
  EXPECT_LT(max_relative_error(kernel.second, reference.second), 1e-5);
}

TEST(BiasAct, KernelMatchesReferenceToSecondOrder) {
  at::manual_seed(3);
  struct Case {
    ops::Activation act;
    double gain, clamp;
  };
  for (const Case& c : {Case{ops::Activation::LRelu, -1, -1}, Case{ops::Activation::Linear, 0.7, -1},
                        Case{ops::Activation::Relu, -1, -1}, Case{ops::Activation::LRelu, 1.5, 0.8}}) {
    ops::BiasActParams p;
    p.act = c.act;
    p.gain = c.gain;
    p.clamp = c.clamp;
    const at::Tensor x0 = at::randn({4, 5, 3, 3}), b0 = at::randn({5}), w = at::randn({4, 5, 3, 3});
    auto run = [&](ops::Kernel impl) {
      at::Tensor x = x0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
      at::Tensor y = ops::bias_act(x, b, p, impl);
      auto grads = torch::autograd::grad({(y.square() * w).sum()}, {x, b}, {}, true, true);
      auto second = torch::autograd::grad({(grads[0] * w).sum() + grads[1].sum()}, {x, b});
      return std::vector<at::Tensor>{y.detach(), grads[0].detach(), grads[1].detach(), second[0], second[1]};
    };
    const auto kernel = run(ops::Kernel::Auto), reference = run(ops::Kernel::Reference);
    for (size_t i = 0; i < kernel.size(); ++i) {
      EXPECT_LT(max_relative_error(kernel[i], reference[i]), 1e-5) << "output " << i << " act " << ops::to_string(c.act);
    }
  }
}

// The kernels clamp as the reference's CUDA kernel: NaN becomes -clamp with a zero gradient, and
// infinities take their bound; the reference op (the reference's _bias_act_ref) keeps NaN.
TEST(BiasAct, KernelClampsNaNToTheLowerBoundAsTheReferenceCudaKernel) {
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  p.clamp = 2;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  at::Tensor x = at::tensor({nan, inf, -inf, 0.5f}).reshape({1, 4}).requires_grad_(true);
  const at::Tensor y = ops::bias_act(x, at::Tensor(), p, ops::Kernel::Auto);
  y.sum().backward();
  const double g = std::sqrt(2.0);
  const std::vector<double> expected_y{-2, 2, -2, 0.5 * g}, expected_grad{0, 0, 0, g};
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(y[0][i].item<double>(), expected_y[i], 1e-6) << "element " << i;
    EXPECT_NEAR(x.grad()[0][i].item<double>(), expected_grad[i], 1e-6) << "element " << i;
  }
  EXPECT_TRUE(std::isnan(ops::bias_act(x.detach(), at::Tensor(), p, ops::Kernel::Reference)[0][0].item<float>()));
}

// The bias's gradient (dx summed over every dimension but the channels') only where b takes one:
// in G's phases D's biases do not, and a first-order backward spent a pass over each layer's dx
// on them. The same dx either way, and the same db where it is asked for.
TEST(BiasAct, SumsTheBiasGradientOnlyWhereTheBiasTakesOne) {
  at::manual_seed(5);
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  const at::Tensor x0 = at::randn({2, 3, 4, 5}), b0 = at::randn({3}), dy = at::randn({2, 3, 4, 5});
  const auto backward = [&](bool bias_takes_gradient) {
    const at::Tensor x = x0.clone().requires_grad_(true), b = b0.clone().requires_grad_(bias_takes_gradient);
    sg2::test::RecordedOps sums({"aten::sum"});
    ops::bias_act(x, b, p, ops::Kernel::Auto).backward(dy);
    return std::make_tuple(sums.take().size(), x.grad(), b.grad());
  };
  const auto [sums_with, dx_with, db_with] = backward(true);
  const auto [sums_without, dx_without, db_without] = backward(false);
  EXPECT_GE(sums_with, 1u);
  EXPECT_EQ(sums_without, 0u);
  EXPECT_FALSE(db_without.defined());
  EXPECT_TRUE(dx_with.equal(dx_without));
  EXPECT_TRUE(db_with.allclose(dx_with.sum({0, 2, 3}), 1e-6, 1e-6));
}

// A first-order backward that sums b's gradient takes dx and the sums in one pass of the
// epilogue's gradient kernel (demodulation 1, no noise), for 4-D tensors in its layouts: the same dx
// bit for bit, and each channel's sum of it (float32 sums in another order: 1e-5).
TEST(BiasAct, OnePassGradientWithTheBiasSumsMatchesTheTwoPasses) {
  at::manual_seed(6);
  const ActivationParams lrelu_clamped = resolve({1, ops::Activation::LRelu, -1, -1, 0.5});
  const ActivationParams linear = resolve({1, ops::Activation::Linear, -1, -1, -1});
  for (const auto layout : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast}) {
    for (const ActivationParams& a : {lrelu_clamped, linear}) {
      const at::Tensor y = (at::randn({3, 8, 5, 6}) * 0.4).contiguous(layout), dy = at::randn({3, 8, 5, 6});
      const auto fused = bias_act_gradient_with_bias_sums(dy, y, 1, a);
      ASSERT_TRUE(fused.has_value()) << layout;
      const at::Tensor dx = differentiable_bias_act_gradient(dy, y, a);
      EXPECT_TRUE(fused->first.equal(dx)) << layout;
      EXPECT_EQ(fused->second.scalar_type(), at::kFloat);
      EXPECT_LT(max_relative_error(fused->second, dx.sum({0, 2, 3})), 1e-5) << layout;
    }
  }
  const at::Tensor y = at::randn({3, 8, 5, 6}), dy = at::randn({3, 8, 5, 6});
  EXPECT_FALSE(bias_act_gradient_with_bias_sums(dy, y, 2, lrelu_clamped));  // not the channels
  EXPECT_FALSE(bias_act_gradient_with_bias_sums(dy[0], y[0], 1, lrelu_clamped));  // 3-D
  EXPECT_FALSE(bias_act_gradient_with_bias_sums(dy.to(at::kDouble), y.to(at::kDouble), 1, lrelu_clamped));
  EXPECT_FALSE(bias_act_gradient_with_bias_sums(dy, y.transpose(2, 3), 1, lrelu_clamped));  // neither layout
}

// Through autograd: the kernels' gradients of x and b (one pass, first order) against the
// reference ops', in both layouts; with create_graph the two passes, differentiable.
TEST(BiasAct, KernelGradientsOfXAndBiasMatchTheReferenceInBothLayouts) {
  at::manual_seed(7);
  const ops::BiasActParams p{1, ops::Activation::LRelu, -1, -1, 0.8};
  for (const auto layout : {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast}) {
    for (const bool create_graph : {false, true}) {
      const at::Tensor x0 = at::randn({2, 16, 4, 4}).contiguous(layout), b0 = at::randn({16}) * 0.1;
      const at::Tensor dy = at::randn({2, 16, 4, 4});
      const auto gradients = [&](ops::Kernel impl) {
        const at::Tensor x = x0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
        return torch::autograd::grad({ops::bias_act(x, b, p, impl)}, {x, b}, {dy}, create_graph, create_graph);
      };
      const auto fast = gradients(ops::Kernel::Auto), reference = gradients(ops::Kernel::Reference);
      EXPECT_LT(max_relative_error(fast[0], reference[0]), 1e-6) << layout << " create_graph " << create_graph;
      EXPECT_LT(max_relative_error(fast[1], reference[1]), 1e-5) << layout << " create_graph " << create_graph;
      EXPECT_EQ(fast[1].requires_grad(), create_graph);
    }
  }
}

TEST(BiasAct, FullyConnectedLayoutAndNoBias) {
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  const at::Tensor x = at::tensor({-1.f, 2.f, 3.f, -4.f}).reshape({2, 2});
  const at::Tensor y = kernels::bias_act_forward(x, at::Tensor(), p);
  const double g = std::sqrt(2.0);
  EXPECT_NEAR(y[0][0].item<double>(), -0.2 * g, 1e-6);
  EXPECT_NEAR(y[1][0].item<double>(), 3 * g, 1e-6);
  EXPECT_NEAR(y[1][1].item<double>(), -0.8 * g, 1e-6);
}

TEST(Demodulation, UnitNormPerOutputChannelAndFastEqualsReference) {
  at::manual_seed(4);
  const at::Tensor weight = at::randn({6, 5, 3, 3}), styles = at::randn({4, 5});
  const at::Tensor fast = ops::demodulation_coefficients(weight, styles);
  const at::Tensor reference = ops::demodulation_coefficients_reference(weight, styles);
  EXPECT_LT(max_relative_error(fast, reference), 1e-5);
  // Per-sample weights w * s * d have unit L2 norm per (sample, output channel).
  const at::Tensor w = weight.unsqueeze(0) * styles.reshape({4, 1, 5, 1, 1}) * fast.reshape({4, 6, 1, 1, 1});
  const at::Tensor norms = w.square().sum({2, 3, 4});
  EXPECT_LT((norms - 1).abs().max().item<double>(), 1e-5);
}

TEST(ModulatedConv, FusedEqualsUnfused) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({3, 4, 8, 8}), weight = at::randn({5, 4, 3, 3}), styles = at::randn({3, 4});
  const at::Tensor noise = at::randn({3, 1, 16, 16}), f = ops::setup_filter({1, 3, 3, 1});
  ops::ModConvParams p;
  p.up = 2;
  p.padding = 1;
  p.flip_weight = false;
  p.fused = true;
  const at::Tensor fused = ops::modulated_conv2d(x, weight, styles, noise, f, p);
  p.fused = false;
  const at::Tensor unfused = ops::modulated_conv2d(x, weight, styles, noise, f, p);
  EXPECT_EQ(fused.sizes(), at::IntArrayRef({3, 5, 16, 16}));
  EXPECT_LT(max_relative_error(fused, unfused), 1e-5);
}

TEST(MinibatchStddev, HandComputedBatch) {
  // N=4, C=2, 1x1, groups of 2: group m holds samples m and m+2.
  const at::Tensor x = at::tensor({1.f, 3.f, 2.f, 5.f, 3.f, 7.f, 6.f, 1.f}).reshape({4, 2, 1, 1});
  const at::Tensor y = ops::minibatch_stddev(x, 2, 1);
  ASSERT_EQ(y.sizes(), at::IntArrayRef({4, 3, 1, 1}));
  // samples 0,2: stddevs 1 (1,3) and 2 (3,7) -> 1.5; samples 1,3: 2 (2,6) and 2 (5,1) -> 2.
  const std::vector<float> expected{1.5f, 2.0f, 1.5f, 2.0f};
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i][2][0][0].item<float>(), expected[static_cast<size_t>(i)], 1e-5);
  EXPECT_TRUE(y.narrow(1, 0, 2).equal(x));
  // One group of all 4: channel 0 (1,2,3,6) has variance 3.5, channel 1 (3,5,7,1) variance 5.
  EXPECT_NEAR(ops::minibatch_stddev(x, 0, 1)[0][2][0][0].item<float>(), (std::sqrt(3.5) + std::sqrt(5.0)) / 2, 1e-5);
}

TEST(Upfirdn2d, KernelReadsStridedViews) {
  at::manual_seed(7);
  const at::Tensor big = at::randn({2, 3, 11, 12}), f = ops::setup_filter({1, 3, 3, 1});
  const at::Tensor view = big.narrow(2, 1, 9).narrow(3, 0, 10);  // rows contiguous, planes strided
  const ops::FirParams p{1, 2, {1, 1, 1, 1}, false, 1.0};
  EXPECT_LT(max_relative_error(kernels::upfirdn2d_forward(view, f, p), upfirdn2d_direct(view, f, p)), 1e-6);
}

// A channels_last network pays no transposes around the kernels: they keep the layout they are
// given, in values and gradients, and compute what the reference computes.
TEST(ChannelsLast, KernelsKeepTheLayoutAndMatchTheReference) {
  at::manual_seed(8);
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  const at::Tensor x0 = at::randn({2, 5, 6, 7}).contiguous(channels_last), b0 = at::randn({5});
  const at::Tensor w = at::randn({2, 5, 6, 7});
  ops::BiasActParams p;
  p.act = ops::Activation::LRelu;
  p.clamp = 0.9;
  auto run = [&](ops::Kernel impl) {
    at::Tensor x = x0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
    at::Tensor y = ops::bias_act(x, b, p, impl);
    const auto grads = torch::autograd::grad({(y.square() * w).sum()}, {x, b});
    return std::vector<at::Tensor>{y.detach(), grads[0], grads[1]};
  };
  const auto kernel = run(ops::Kernel::Auto), reference = run(ops::Kernel::Reference);
  EXPECT_TRUE(kernel[0].is_contiguous(channels_last));
  EXPECT_TRUE(kernel[1].is_contiguous(channels_last));
  for (size_t i = 0; i < kernel.size(); ++i) EXPECT_LT(max_relative_error(kernel[i], reference[i]), 1e-6) << i;

  // Dense layouts that are neither (a transposed fully-connected activation, permuted planes): the
  // channel of each element of memory comes from dim's stride.
  for (const at::Tensor& x : {at::randn({5, 4}).t(), at::randn({6, 2, 5, 7}).permute({1, 2, 0, 3})}) {
    const at::Tensor y = ops::bias_act(x, b0.narrow(0, 0, x.size(1)), p, ops::Kernel::Auto);
    EXPECT_EQ(y.strides(), x.strides());
    EXPECT_LT(max_relative_error(y, ops::bias_act(x, b0.narrow(0, 0, x.size(1)), p, ops::Kernel::Reference)), 1e-6)
        << x.sizes() << " strides " << x.strides();
  }

  const at::Tensor f = asymmetric_filter();
  for (const auto& fir : fir_cases()) {
    const at::Tensor y = kernels::upfirdn2d_forward(x0, f, fir);
    EXPECT_TRUE(y.is_contiguous(channels_last)) << "up " << fir.up << " down " << fir.down;
    EXPECT_LT(max_relative_error(y, upfirdn2d_direct(x0, f, fir)), 1e-6) << "up " << fir.up << " down " << fir.down;
  }
  EXPECT_TRUE(kernels::upfirdn2d_forward(x0.contiguous(), f, fir_cases()[1]).is_contiguous());
}

TEST(TransposedConv, PolyphaseMatchesReferenceForwardAndBackward) {
  at::manual_seed(6);
  for (int64_t k : {1, 2, 3, 4}) {
    const at::Tensor x0 = at::randn({2, 5, 6, 7}), w0 = at::randn({5, 4, k, k});
    const at::Tensor g = at::randn({2, 4, 2 * 5 + k, 2 * 6 + k});  // upstream gradient
    auto run = [&](ops::Kernel impl) {
      at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
      at::Tensor y = ops::transposed_conv2d(x, w, 2, {0, 0}, 1, impl);
      auto grads = torch::autograd::grad({(y * g).sum()}, {x, w});
      return std::vector<at::Tensor>{y.detach(), grads[0], grads[1]};
    };
    const auto fast = run(ops::Kernel::Auto), reference = run(ops::Kernel::Reference);
    ASSERT_EQ(fast[0].sizes(), reference[0].sizes()) << "k " << k;
    EXPECT_EQ(fast[0].size(2), 2 * 5 + k) << "k " << k;
    for (size_t i = 0; i < fast.size(); ++i) EXPECT_LT(max_relative_error(fast[i], reference[i]), 1e-5) << "k " << k << " output " << i;
  }
}

// Which implementation ran, read from the autograd node that made y: the kernel's own function or
// the reference's LibTorch ops.
bool made_by_kernel(const at::Tensor& y, const std::string& function) {
  return y.grad_fn() && y.grad_fn()->name().find(function) != std::string::npos;
}

TEST(ComputeSettings, EachCallChoosesItsKernelAndCompositesPassItDown) {
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const at::Tensor x = at::randn({1, 2, 8, 8}).requires_grad_(true);
  ops::FirParams p;
  p.down = 2;
  EXPECT_EQ(ops::ComputeSettings().kernel, ops::Kernel::Auto);
  EXPECT_TRUE(made_by_kernel(ops::upfirdn2d(x, f, p), "Upfirdn2dFunction"));
  EXPECT_FALSE(made_by_kernel(ops::upfirdn2d(x, f, p, ops::Kernel::Reference), "Upfirdn2dFunction"));
  EXPECT_FALSE(made_by_kernel(ops::bias_act(x, at::Tensor(), {}, ops::Kernel::Reference), "BiasActFunction"));
  EXPECT_FALSE(made_by_kernel(ops::downsample2d(x, f, 2, ops::Kernel::Reference), "Upfirdn2dFunction"));
  EXPECT_TRUE(made_by_kernel(ops::downsample2d(x, f, 2, ops::Kernel::Auto), "Upfirdn2dFunction"));
  // A named CUDA kernel on the CPU: its one kernel.
  EXPECT_TRUE(made_by_kernel(ops::bias_act(x, at::Tensor(), {}, ops::Kernel::PerElement), "BiasActFunction"));
  EXPECT_TRUE(made_by_kernel(ops::upfirdn2d(x, f, p, ops::Kernel::Tiled), "Upfirdn2dFunction"));
  // The gradient runs the same choice: the reference's backward has no kernel node either.
  const at::Tensor y = ops::upfirdn2d(x, f, p, ops::Kernel::Reference);
  const at::Tensor dx = torch::autograd::grad({y.square().sum()}, {x}, {}, true, /*create_graph=*/true)[0];
  EXPECT_FALSE(made_by_kernel(dx, "Upfirdn2dFunction"));
  const at::Tensor y_kernel = ops::upfirdn2d(x, f, p);
  const at::Tensor dx_kernel = torch::autograd::grad({y_kernel.square().sum()}, {x}, {}, true, /*create_graph=*/true)[0];
  EXPECT_TRUE(made_by_kernel(dx_kernel, "Upfirdn2dFunction"));
}

TEST(Conv2dResample, OutputSizes) {
  const at::Tensor f = ops::setup_filter({1, 3, 3, 1});
  const at::Tensor x = at::randn({2, 3, 8, 8});
  ops::ConvResampleParams p;
  p.padding = {1, 1, 1, 1};
  EXPECT_EQ(ops::conv2d_resample(x, at::randn({4, 3, 3, 3}), f, p).sizes(), at::IntArrayRef({2, 4, 8, 8}));
  p.up = 2;
  p.flip_weight = false;
  EXPECT_EQ(ops::conv2d_resample(x, at::randn({4, 3, 3, 3}), f, p).sizes(), at::IntArrayRef({2, 4, 16, 16}));
  p.up = 1;
  p.down = 2;
  p.flip_weight = true;
  EXPECT_EQ(ops::conv2d_resample(x, at::randn({4, 3, 3, 3}), f, p).sizes(), at::IntArrayRef({2, 4, 4, 4}));
  p.padding = {0, 0, 0, 0};
  EXPECT_EQ(ops::conv2d_resample(x, at::randn({4, 3, 1, 1}), f, p).sizes(), at::IntArrayRef({2, 4, 4, 4}));
}

}  // namespace
}  // namespace sg2::ops
