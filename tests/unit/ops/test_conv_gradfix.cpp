// conv2d_gradfix (sg2/ops/conv_gradfix.h) against LibTorch's own convolution autograd: the same
// outputs, first- and second-order gradients (both mixed orders that R1 and path length take, and a
// third), for StyleGAN2's convolutions: 3x3 with padding, the strided 3x3 after D's filter, the
// transposed stride-2 one of G's upsampling, 1x1, grouped; on the CPU in float64 and, where a GPU
// is, on it in float32. Then the same in float32 with the convolutions split into three TF32 passes
// (sg2/ops/tf32_split.h), against LibTorch's float32 arithmetic.
#include "sg2/ops/conv_gradfix.h"
#include "sg2/ops/tf32_split.h"
#include "ops_test_support.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <array>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace sg2::ops {
namespace {

using ops::ConvGeometry;
using test::max_relative_error;
using Convolution = std::function<at::Tensor(const at::Tensor&, const at::Tensor&, const ConvGeometry&)>;

at::Tensor libtorch_convolution(const at::Tensor& x, const at::Tensor& w, const ConvGeometry& g) {
  const std::array<int64_t, 2> ones{1, 1};
  if (g.transpose) return at::conv_transpose2d(x, w, at::Tensor(), g.stride, g.padding, g.output_padding, g.groups, ones);
  return at::conv2d(x, w, at::Tensor(), g.stride, g.padding, ones, g.groups);
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> x_shape, w_shape;
  ConvGeometry geometry;
};

std::vector<ConvCase> conv_cases() {
  ConvGeometry same, strided, transposed, grouped;
  same.padding = {1, 1};
  strided.stride = {2, 2};
  transposed.stride = {2, 2};
  transposed.transpose = true;
  grouped.padding = {1, 0};
  grouped.groups = 2;
  return {{"3x3, padding 1", {2, 4, 7, 6}, {5, 4, 3, 3}, same},
          {"3x3, stride 2 (odd size: the input gradient needs output padding)", {2, 4, 10, 9}, {5, 4, 3, 3}, strided},
          {"transposed 3x3, stride 2", {2, 4, 5, 6}, {4, 3, 3, 3}, transposed},
          {"1x1", {3, 6, 5, 5}, {3, 6, 1, 1}, ConvGeometry{}},
          {"grouped 3x3, padding 1 0", {2, 4, 6, 7}, {6, 2, 3, 3}, grouped}};
}

// Every gradient the losses take, through `conv` and a tanh (so that every order depends on both x
// and w): y; dx and dw of <tanh(y), r>; the gradients of |dx|^2 (R1 and path length: the input
// gradient differentiated again) and of |dw|^2 for x and w; and a third order, the gradient for w
// of |d(|dx|^2)/dw|^2.
std::vector<at::Tensor> every_order(const Convolution& conv, const at::Tensor& x_in, const at::Tensor& w_in,
                                    const at::Tensor& r, const ConvGeometry& g) {
  const at::Tensor x = x_in.detach().requires_grad_(true), w = w_in.detach().requires_grad_(true);
  const at::Tensor y = conv(x, w, g);
  const auto first =
      torch::autograd::grad({(at::tanh(y) * r).sum()}, {x, w}, {}, /*retain_graph=*/true, /*create_graph=*/true);
  const auto r1 = torch::autograd::grad({first[0].square().sum()}, {x, w}, {}, true, true);
  const auto weight_path = torch::autograd::grad({first[1].square().sum()}, {x, w}, {}, true, true);
  const auto third = torch::autograd::grad({r1[1].square().sum()}, {w}, {}, true, false);
  return {y, first[0], first[1], r1[0], r1[1], weight_path[0], weight_path[1], third[0]};
}

// With x and the geometry in `layout` (r, the gradient that reaches y, stays NCHW, as ToRGB's from
// the float32 images does); in channels_last, every feature map of every order is channels_last too.
// tf32_split: the devices whose float32 passes conv2d_gradfix splits, at every order.
void expect_every_order_matches(const at::TensorOptions& options, double tolerance,
                                at::MemoryFormat layout = at::MemoryFormat::Contiguous,
                                DeviceSet tf32_split = DeviceSet::None) {
  const char* names[] = {"y", "dx", "dw", "d|dx|^2/dx", "d|dx|^2/dw", "d|dw|^2/dx", "d|dw|^2/dw", "third order, dw"};
  const bool feature_map[] = {true, true, false, true, false, true, false, false};
  at::manual_seed(3);
  for (ConvCase c : conv_cases()) {
    c.geometry.layout = layout;
    c.geometry.tf32_split = tf32_split;
    const at::Tensor x = at::randn(c.x_shape, options).contiguous(layout), w = at::randn(c.w_shape, options);
    const at::Tensor y = libtorch_convolution(x, w, c.geometry), r = at::randn(y.sizes(), options);
    const auto expected = every_order(libtorch_convolution, x, w, r, c.geometry);
    const auto ours = every_order(ops::conv2d_gradfix, x, w, r, c.geometry);
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(ours[i].sizes(), expected[i].sizes()) << c.name << ": " << names[i];
      EXPECT_LT(max_relative_error(ours[i].cpu().to(at::kDouble), expected[i].cpu().to(at::kDouble)), tolerance)
          << c.name << ": " << names[i];
      if (feature_map[i]) {
        EXPECT_TRUE(ours[i].is_contiguous(layout)) << c.name << ": " << names[i];
      }
    }
  }
}

TEST(Conv2dGradfix, EveryOrderMatchesLibTorchsAutograd) {
  expect_every_order_matches(at::TensorOptions().dtype(at::kDouble), 1e-10);
}

// A channels_last network's gradients stay channels_last to every order: LibTorch's CPU transposed
// convolution and cuDNN with a 3-channel NCHW gradient (ToRGB's) would give NCHW ones.
TEST(Conv2dGradfix, EveryOrderKeepsAChannelsLastLayout) {
  expect_every_order_matches(at::TensorOptions().dtype(at::kDouble), 1e-10, at::MemoryFormat::ChannelsLast);
}

// The input gradient's geometry gives x's size back for every size that a stride-2 convolution
// maps to one output size.
TEST(Conv2dGradfix, TheInputGradientRestoresTheInputSize) {
  ConvGeometry strided;
  strided.stride = {2, 2};
  strided.padding = {1, 0};
  for (const int64_t h : {8, 9}) {
    for (const int64_t width : {6, 7}) {
      const at::Tensor x = at::randn({1, 2, h, width}), w = at::randn({3, 2, 3, 3});
      const at::Tensor y = ops::conv2d_gradfix(x, w, strided);
      const ConvGeometry back = ops::input_gradient_geometry(strided, x.sizes(), y.sizes(), w.sizes());
      EXPECT_TRUE(back.transpose);
      EXPECT_EQ(ops::conv2d_gradfix(y, w, back).sizes(), x.sizes()) << h << "x" << width;
    }
  }
}

// The CPU keeps LibTorch's own autograd, as the reference does, unless turned on for every device.
TEST(Conv2dGradfix, RunsOnTheCpuOnlyWhenTurnedOnForEveryDevice) {
  const at::Tensor x = at::randn({1, 2, 4, 4}).requires_grad_(true), w = at::randn({2, 2, 3, 3});
  ComputeSettings compute;
  EXPECT_FALSE(ops::uses_conv2d_gradfix(x, w, compute));
  compute.conv2d_gradfix = DeviceSet::All;
  EXPECT_TRUE(ops::uses_conv2d_gradfix(x, w, compute));
  EXPECT_FALSE(ops::uses_conv2d_gradfix(x, w, with_kernel(compute, Kernel::Reference)));
}

// Only CUDA tensors with the fast ops, while gradients are recorded, and not when turned off.
TEST(CudaKernels, Conv2dGradfixRunsOnlyOnCudaWithTheFastOpsInTraining) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor x = at::randn({1, 2, 4, 4}).requires_grad_(true), w = at::randn({2, 2, 3, 3});
  const at::Tensor xc = x.detach().cuda().requires_grad_(true), wc = w.cuda();
  ComputeSettings compute;
  EXPECT_TRUE(ops::uses_conv2d_gradfix(xc, wc, compute));
  EXPECT_FALSE(ops::uses_conv2d_gradfix(xc, wc, with_kernel(compute, Kernel::Reference)));
  EXPECT_FALSE(ops::uses_conv2d_gradfix(xc.detach(), wc, compute));
  {
    const at::NoGradGuard no_grad;
    EXPECT_FALSE(ops::uses_conv2d_gradfix(xc, wc, compute));
  }
  compute.conv2d_gradfix = DeviceSet::None;
  EXPECT_FALSE(ops::uses_conv2d_gradfix(xc, wc, compute));
}

TEST(CudaKernels, Conv2dGradfixMatchesLibTorchsAutogradOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  at::globalContext().setAllowTF32CuDNN(false);
  expect_every_order_matches(at::TensorOptions().device(at::kCUDA), 2e-5);
  expect_every_order_matches(at::TensorOptions().device(at::kCUDA), 2e-5, at::MemoryFormat::ChannelsLast);
}

// a = hi + lo exactly, hi the nearest TF32 number (its 13 low mantissa bits clear; ties away from
// zero), lo at most 2^-11 of a, in a's layout; over twelve orders of magnitude, both signs, zeros
// and float32's smallest normals.
TEST(Tf32Split, SplitsEachValueIntoATf32NumberAndItsExactRest) {
  at::manual_seed(21);
  at::Tensor a = at::randn({2, 8, 5, 6}) * at::pow(10.0, at::randint(-6, 7, {2, 8, 5, 6}).to(at::kFloat));
  a.index_put_({0, 0}, 0.0);
  a.index_put_({0, 1, 0}, std::ldexp(1.2345f, -126));
  a.index_put_({0, 2, 0, 0}, 1.0f + std::ldexp(1.0f, -11));   // a tie: rounds up to 1 + 2^-10
  a.index_put_({0, 2, 0, 1}, -1.0f - std::ldexp(1.0f, -11));  // and away from zero
  a.index_put_({0, 2, 0, 2}, 1.0f + std::ldexp(1.0f, -10) - std::ldexp(1.0f, -20));  // just below the next: up
  a = a.contiguous(at::MemoryFormat::ChannelsLast);
  const auto [hi, lo] = ops::split_tf32(a);
  EXPECT_TRUE(hi.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(lo.is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_EQ(at::bitwise_and(hi.view(at::kInt), 0x1FFF).count_nonzero().item<int64_t>(), 0);
  EXPECT_TRUE((hi + lo).equal(a));
  EXPECT_TRUE((lo.abs() <= a.abs() * std::ldexp(1.0, -11)).all().item<bool>());  // truncation: up to 2^-10
  EXPECT_EQ(hi[0][2][0][0].item<float>(), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(hi[0][2][0][1].item<float>(), -1.0f - std::ldexp(1.0f, -10));
  EXPECT_EQ(hi[0][2][0][2].item<float>(), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_GT(lo.count_nonzero().item<int64_t>(), a.numel() / 2);  // the rest is there to keep
}

// f runs three times, on (hi, hi), (hi, lo) and (lo, hi), only for float32 on a device the setting
// names while no gradient is recorded through the operands; else once, on them as they are. With
// the elementwise product (bilinear too) the sum is the product to float32's accuracy.
TEST(Tf32Split, ABilinearFunctionRunsInThreePassesOnlyWhereTheSplitApplies) {
  at::manual_seed(22);
  const at::Tensor a = at::randn({64}), b = at::randn({64});
  int calls = 0;
  const ops::Bilinear product = [&calls](const at::Tensor& x, const at::Tensor& y) {
    ++calls;
    return x * y;
  };
  const auto calls_for = [&](const at::Tensor& x, const at::Tensor& y, DeviceSet devices) {
    calls = 0;
    ops::bilinear_in_tf32_passes(x, y, devices, product);
    return calls;
  };
  EXPECT_EQ(calls_for(a, b, ComputeSettings().tf32_split), 1);  // off by default
  EXPECT_EQ(calls_for(a, b, DeviceSet::Cuda), 1);               // a CPU tensor
  EXPECT_EQ(calls_for(a, b, DeviceSet::All), 3);
  EXPECT_EQ(calls_for(a.to(at::kDouble), b.to(at::kDouble), DeviceSet::All), 1);
  const at::Tensor a_recorded = a.detach().requires_grad_(true);
  EXPECT_EQ(calls_for(a_recorded, b, DeviceSet::All), 1);  // recorded: the split's bit operations have no gradient
  {
    const at::NoGradGuard no_grad;
    EXPECT_EQ(calls_for(a_recorded, b, DeviceSet::All), 3);
  }
  const at::Tensor split = ops::bilinear_in_tf32_passes(a, b, DeviceSet::All, product);
  EXPECT_LT(max_relative_error(split, a.to(at::kDouble) * b.to(at::kDouble)), std::ldexp(1.0, -20));
  const auto [a_hi, a_lo] = ops::split_tf32(a);
  EXPECT_GT(max_relative_error(a_hi * b, a.to(at::kDouble) * b.to(at::kDouble)), std::ldexp(1.0, -14));  // one pass
}

// Every order of conv2d_gradfix with the split, in float32 on the CPU (no TF32 there: the three passes
// in float32) against LibTorch's float32 autograd without it: within 2e-5 (measured: 5.4e-6, the
// dropped lo * lo terms and float32's rounding); leaving out one of the three passes gives 4e-4 to 5e-3.
TEST(Tf32Split, EveryOrderOfASplitConvolutionMatchesLibTorchsFloat32Autograd) {
  const auto floats = at::TensorOptions().dtype(at::kFloat);
  expect_every_order_matches(floats, 2e-5, at::MemoryFormat::Contiguous, DeviceSet::All);
  expect_every_order_matches(floats, 2e-5, at::MemoryFormat::ChannelsLast, DeviceSet::All);
}

// On a GPU: in three split TF32 passes a float32 convolution keeps float32's accuracy against
// float64 (in one TF32 pass it would lose about 2^-11 of its size: printed), the passes' TF32 ends
// with them, and every order of conv2d_gradfix with the split matches LibTorch's float32 autograd.
TEST(CudaKernels, SplitTf32ConvolutionsKeepFloat32Accuracy) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  at::manual_seed(23);
  const auto cuda = at::TensorOptions().device(at::kCUDA);
  const at::Tensor x = at::randn({8, 64, 16, 16}, cuda), w = at::randn({64, 64, 3, 3}, cuda) * 0.05;
  const ops::Bilinear conv = [](const at::Tensor& a, const at::Tensor& b) {
    const std::array<int64_t, 2> ones{1, 1};
    return at::conv2d(a, b, at::Tensor(), ones, ones);
  };
  const at::Tensor exact = conv(x.to(at::kDouble), w.to(at::kDouble)).cpu();
  at::globalContext().setAllowTF32CuDNN(false);
  const double ieee = max_relative_error(conv(x, w).cpu(), exact);
  double split = 0;
  split = max_relative_error(ops::bilinear_in_tf32_passes(x, w, DeviceSet::Cuda, conv).cpu(), exact);
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());  // the passes' TF32 ended with them
  at::globalContext().setAllowTF32CuDNN(true);
  const double tf32 = max_relative_error(conv(x, w).cpu(), exact);
  at::globalContext().setAllowTF32CuDNN(false);
  EXPECT_LT(ieee, 1e-5);
  EXPECT_LT(split, 1e-5) << "float32 " << ieee << ", one TF32 pass " << tf32;
  std::cout << "float32 convolution's error: FFMA " << ieee << ", 3xTF32 " << split << ", TF32 " << tf32 << "\n";
  expect_every_order_matches(cuda, 5e-5, at::MemoryFormat::Contiguous, DeviceSet::Cuda);
  expect_every_order_matches(cuda, 5e-5, at::MemoryFormat::ChannelsLast, DeviceSet::Cuda);
}

}  // namespace
}  // namespace sg2::ops
