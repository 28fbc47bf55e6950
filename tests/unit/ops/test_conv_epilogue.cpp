// The synthesis layers' epilogue and input modulation (sg2/ops/conv_epilogue.h): their kernels
// against the reference's composition (addcmul, then bias_act's reference ops; the product),
// forward, the gradient kernel's pass and its sums, and second order through the composed gradient;
// on the CPU at every CPU level, on a GPU in every precision; and where the ops compose instead.
// Both layouts throughout: NCHW, and channels_last (NHWC memory, kept from x to y and dx). The CUDA
// kernels' per-pack and per-lane arithmetic on the host: test_conv_epilogue_host_kernels.cpp.
#include "sg2/ops/conv_epilogue.h"
#include "sg2/ops/ops.h"
#include "bias_act_autograd.h"
#include "channel_layout.h"
#include "epilogue_cases.h"
#include "ops_test_support.h"
#include "recorded_ops.h"
#include "test_support.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sg2::ops {
namespace {

using test::cases_in_both_layouts;
using test::EpilogueCase;
using test::epilogue_cases;
using test::EpilogueInputs;
using test::kLayouts;
using test::kPrecisions;
using test::layout_name;
using test::leaves;
using test::LevelGuard;
using test::max_relative_error;
using test::params_of;
using test::Precision;
using test::random_inputs;
using test::run_op;

// y; the first derivatives of L = sum(y * g) without create_graph (the gradient kernel where the
// kernels ran); with create_graph, the second derivatives of sum(dL/dx * u) + sum(dL/d demod) (the
// composed gradient). g and u are rounded to `rounding` first, so that runs in different types see
// the same ones.
std::vector<at::Tensor> epilogue_derivatives(const EpilogueCase& c, const EpilogueInputs& in, ops::Kernel impl,
                                             at::ScalarType rounding = at::kFloat, bool second_order = true) {
  std::vector<at::Tensor> v = leaves(in);
  at::Tensor y = run_op(c, in, v, impl);
  at::manual_seed(22);
  const at::Tensor g = at::randn(y.sizes()).to(rounding).to(y.device(), y.scalar_type());
  const at::Tensor u = at::randn(y.sizes()).to(rounding).to(y.device(), y.scalar_type());
  std::vector<at::Tensor> out{y.detach().to(at::kFloat).cpu()};
  for (const auto& d : torch::autograd::grad({(y * g).sum()}, v)) out.push_back(d.to(at::kFloat).cpu());
  if (!second_order) return out;
  v = leaves(in);
  y = run_op(c, in, v, impl);
  const auto first = torch::autograd::grad({(y * g).sum()}, v, {}, true, /*create_graph=*/true);
  const auto second = torch::autograd::grad({(first[0] * u).sum() + first[1].sum()}, v, {}, false, false, true);
  for (const auto& d : second) {
    if (d.defined()) out.push_back(d.to(at::kFloat).cpu());
  }
  return out;
}

TEST(ConvEpilogue, KernelsMatchTheComposedReferenceToSecondOrderAtEveryCpuLevel) {
  LevelGuard guard;
  for (const auto& [c, layout] : cases_in_both_layouts()) {
    const std::string where = c.name + ", " + layout_name(layout);
    const EpilogueInputs in = random_inputs(c, at::kFloat, at::kCPU, layout);
    ASSERT_TRUE(kernels::conv_epilogue_runs_fused(in.x, in.noise, ops::Kernel::Auto)) << where;
    const auto reference = epilogue_derivatives(c, in, ops::Kernel::Reference);
    for (cpu::Level level : cpu::supported_levels()) {
      cpu::force_cpu_level(level);
      const auto kernel = epilogue_derivatives(c, in, ops::Kernel::Auto);
      ASSERT_EQ(kernel.size(), reference.size()) << where;
      for (size_t i = 0; i < kernel.size(); ++i) {
        EXPECT_LT(max_relative_error(kernel[i], reference[i]), 2e-5)
            << where << ", " << cpu::to_string(level) << ", output " << i;
      }
    }
  }
}

// y and dx keep x's layout, so that a channels_last network pays no transposes around the op.
TEST(ConvEpilogue, OutputAndGradientKeepTheInputsLayout) {
  const EpilogueCase c = epilogue_cases()[4];
  for (const at::MemoryFormat layout : kLayouts) {
    const EpilogueInputs in = random_inputs(c, at::kFloat, at::kCPU, layout);
    const std::vector<at::Tensor> v = leaves(in);
    const at::Tensor y = run_op(c, in, v, ops::Kernel::Auto);
    const at::Tensor dx = torch::autograd::grad({y}, {v[0]}, {at::ones_like(y)})[0];
    EXPECT_TRUE(y.is_contiguous(layout)) << layout_name(layout);
    EXPECT_TRUE(dx.is_contiguous(layout)) << layout_name(layout);
  }
}

TEST(ConvEpilogue, RunsItsKernelsOnlyWhereTheyApply) {
  const EpilogueCase c = epilogue_cases()[0];
  const EpilogueInputs in = random_inputs(c, at::kFloat, at::kCPU);
  const auto made_by = [&](const at::Tensor& x, ops::Kernel impl) {
    const at::Tensor y = ops::demodulate_noise_bias_act(x.requires_grad_(true), in.demod, in.noise,
                                                        in.noise_strength, in.bias, params_of(c), impl);
    return y.grad_fn()->name();
  };
  EXPECT_NE(made_by(in.x.clone(), ops::Kernel::Auto).find("ConvEpilogueFunction"), std::string::npos);
  EXPECT_EQ(made_by(in.x.clone(), ops::Kernel::Reference).find("ConvEpilogueFunction"), std::string::npos);
  const at::Tensor channels_last = in.x.contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_NE(made_by(channels_last.clone(), ops::Kernel::Auto).find("ConvEpilogueFunction"), std::string::npos);
  const at::Tensor strided = at::randn({2, 3, 5, 10}).slice(3, 0, 10, 2);  // neither layout: composed
  EXPECT_FALSE(kernels::conv_epilogue_runs_fused(strided, in.noise, ops::Kernel::Auto));
  EXPECT_EQ(made_by(strided, ops::Kernel::Auto).find("ConvEpilogueFunction"), std::string::npos);
  EXPECT_FALSE(kernels::conv_epilogue_runs_fused(in.x, in.noise.clone().requires_grad_(true), ops::Kernel::Auto));
  EXPECT_FALSE(kernels::conv_epilogue_runs_fused(in.x.to(at::kDouble), in.noise, ops::Kernel::Auto));
}

TEST(ConvEpilogue, BadArgumentsNameWhatWasExpected) {
  const EpilogueCase c = epilogue_cases()[0];
  const EpilogueInputs in = random_inputs(c, at::kFloat, at::kCPU);
  const auto message = [&](const at::Tensor& demod, const at::Tensor& noise, const at::Tensor& strength) {
    return sg2::test::error_message(
        [&] { ops::demodulate_noise_bias_act(in.x, demod, noise, strength, in.bias, params_of(c)); });
  };
  EXPECT_NE(message(in.demod.t(), in.noise, in.noise_strength).find("demodulation coefficients [3, 2]"),
            std::string::npos);
  EXPECT_NE(message(in.demod, in.noise.expand({2, 2, 5, 5}), in.noise_strength).find("is not [N or 1, 1, H, W]"),
            std::string::npos);
  EXPECT_NE(message(in.demod, in.noise, at::Tensor()).find("come together"), std::string::npos);
  EXPECT_NE(sg2::test::error_message([&] {
              ops::demodulate_noise_bias_act(in.x, in.demod, in.noise, in.noise_strength, at::ones({4}), params_of(c));
            }).find("bias [4] does not match x [2, 3, 5, 5]"),
            std::string::npos);
}

// The inputs as the kernels' entries take them: every tensor but x float32 and contiguous.
kernels::EpilogueTensors kept_to_contract(const EpilogueInputs& in) {
  return {in.x, in.demod.contiguous(), in.noise.contiguous(), in.noise_strength.contiguous(), in.bias.contiguous()};
}

// What one kernel entry says of tensors outside its contract (and that it runs with them inside).
void expect_entry_refuses_bad_tensors(const EpilogueInputs& in, const ops::BiasActParams& params, bool gradient) {
  const auto message = [&](const kernels::EpilogueTensors& t) {
    return sg2::test::error_message([&] {
      if (gradient) {
        kernels::conv_epilogue_gradient(in.x, in.x, t, params);  // dy and y: any values of x's shape
      } else {
        kernels::conv_epilogue_forward(t, params);
      }
    });
  };
  const auto [x, demod, noise, strength, bias] = kept_to_contract(in);
  EXPECT_EQ(message({x, demod, noise, strength, bias}), "");  // the contract kept: it runs
  EXPECT_NE(message({x.transpose(2, 3), demod, noise, strength, bias}).find("x must be [N, C, H, W]"),
            std::string::npos);
  EXPECT_NE(message({x, in.demod.t().contiguous().t(), noise, strength, bias})
                .find("demod [N, C] must be float32, contiguous"),
            std::string::npos);
  EXPECT_NE(message({x, demod.to(at::kDouble), noise, strength, bias}).find("got Double"), std::string::npos);
  EXPECT_NE(message({x, demod, noise, strength, at::ones({4})}).find("bias [C]"), std::string::npos);
  EXPECT_NE(message({x, demod, at::zeros({3, 1, 5, 5}), strength, bias}).find("noise [N or 1, 1, H, W]"),
            std::string::npos);
  EXPECT_NE(message({x, demod, noise, at::Tensor(), bias}).find("noise_strength must be float32"),
            std::string::npos);
}

// The kernels' own entries, forward and gradient (which the op reaches through its normalisation),
// check what they would read as raw memory; the gradient's dy and y too.
TEST(ConvEpilogue, KernelEntriesRefuseTensorsOutsideTheirContract) {
  const EpilogueCase c = epilogue_cases()[0];
  const EpilogueInputs in = random_inputs(c, at::kFloat, at::kCPU);
  for (const bool gradient : {false, true}) {
    SCOPED_TRACE(gradient ? "conv_epilogue_gradient" : "conv_epilogue_forward");
    expect_entry_refuses_bad_tensors(in, params_of(c), gradient);
  }
  EXPECT_NE(sg2::test::error_message([&] {
              kernels::conv_epilogue_gradient(in.x.slice(3, 0, 4), in.x, kept_to_contract(in), params_of(c));
            }).find("expected a tensor of shape [2, 3, 5, 5], got [2, 3, 5, 4]"),
            std::string::npos);
}

// The modulation of a layer's input runs the epilogue's kernels (linear, no noise or bias); its
// gradient kernel reads dy where y would be.
TEST(ScalePlanes, KernelsMatchTheProductToSecondOrderAtEveryCpuLevel) {
  LevelGuard guard;
  at::manual_seed(23);
  const at::Tensor x0 = at::randn({2, 3, 6, 6}), s0 = at::randn({2, 3}), g = at::randn({2, 3, 6, 6});
  const auto run = [&](const at::Tensor& x_in, ops::Kernel impl) {
    at::Tensor x = x_in.clone().requires_grad_(true), s = s0.clone().requires_grad_(true);
    at::Tensor y = ops::scale_planes(x, s, impl);
    std::vector<at::Tensor> out{y.detach()};
    for (const auto& d : torch::autograd::grad({(y * g).sum()}, {x, s})) out.push_back(d);
    y = ops::scale_planes(x, s, impl);
    const auto first = torch::autograd::grad({(y.square() * g).sum()}, {x, s}, {}, true, /*create_graph=*/true);
    for (const auto& d : torch::autograd::grad({(first[0] * g).sum() + first[1].sum()}, {x, s})) out.push_back(d);
    return std::make_pair(out, std::string(y.grad_fn()->name()));
  };
  const auto [reference, reference_node] = run(x0, ops::Kernel::Reference);
  EXPECT_EQ(reference_node.find("ConvEpilogueFunction"), std::string::npos) << reference_node;
  for (const at::MemoryFormat layout : kLayouts) {
    const at::Tensor x = x0.contiguous(layout);
    for (cpu::Level level : cpu::supported_levels()) {
      cpu::force_cpu_level(level);
      const auto [kernel, kernel_node] = run(x, ops::Kernel::Auto);
      const std::string where = layout_name(layout) + ", " + cpu::to_string(level);
      EXPECT_NE(kernel_node.find("ConvEpilogueFunction"), std::string::npos) << kernel_node;
      EXPECT_TRUE(kernel[0].equal(reference[0])) << where;  // the product, bit for bit
      for (size_t i = 0; i < kernel.size(); ++i) {
        EXPECT_LT(max_relative_error(kernel[i], reference[i]), 2e-5) << where << ", output " << i;
      }
    }
  }
  EXPECT_NE(sg2::test::error_message([&] { ops::scale_planes(x0, s0.t()); }).find("scale [3, 2] does not match x"),
            std::string::npos);
}

// Recorded for a second order (create_graph), x's gradient g * demod (or g * styles) is itself the
// kernels' op, not a broadcast product, in both layouts: one pass each way on a GPU, where a
// product with a [N, C, 1, 1] operand runs LibTorch's strided loop; and demod's (the styles')
// per-plane sums of g * x are an op whose gradients scale planes the same way. Their own gradients
// are checked above (second order against the reference).
TEST(ConvEpilogue, ARecordedGradientScalesItsPlanesWithTheKernels) {
  at::manual_seed(24);
  const ops::BiasActParams lrelu{1, ops::Activation::LRelu, -1, -1, 256};
  for (const at::MemoryFormat layout : kLayouts) {
    const at::Tensor x = at::randn({2, 8, 5, 5}).contiguous(layout).requires_grad_(true);
    const at::Tensor demod = (at::rand({2, 8}) + 0.5).requires_grad_(true), b = at::randn({8});
    const at::Tensor dy = at::randn({2, 8, 5, 5}).contiguous(layout);  // as the networks' gradients arrive
    for (const bool modulation : {false, true}) {
      const at::Tensor y = modulation ? ops::scale_planes(x, demod, ops::Kernel::Auto)
                                      : ops::demodulate_noise_bias_act(x, demod, at::Tensor(), at::Tensor(), b, lrelu,
                                                                       ops::Kernel::Auto);
      const auto d = torch::autograd::grad({y}, {x, demod}, {dy}, /*retain_graph=*/true, /*create_graph=*/true);
      const std::string where = layout_name(layout) + (modulation ? ", modulation" : ", epilogue");
      ASSERT_TRUE(d[0].grad_fn() && d[1].grad_fn()) << where;
      EXPECT_NE(d[0].grad_fn()->name().find("ConvEpilogueFunction"), std::string::npos) << d[0].grad_fn()->name()
                                                                                        << where;
      EXPECT_TRUE(d[0].is_contiguous(layout)) << where;
      EXPECT_NE(d[1].grad_fn()->name().find("PlaneDotFunction"), std::string::npos) << d[1].grad_fn()->name() << where;
    }
  }
}

// The input modulation's op is linear with slope 1: its recorded gradient (create_graph) and that
// gradient's own gradient pass g on as it is, where a product with the gain 1 made a pass over each
// (at 256x256 in a Greg call of config-f, [16, 128, 256, 256] each).
TEST(ConvEpilogue, TheModulationsRecordedGradientMultipliesNothingByItsUnitSlope) {
  at::manual_seed(25);
  for (const at::MemoryFormat layout : kLayouts) {
    const at::Tensor x = at::randn({2, 8, 5, 5}).contiguous(layout).requires_grad_(true);
    const at::Tensor styles = (at::rand({2, 8}) + 0.5).requires_grad_(true);
    const at::Tensor dy = at::randn({2, 8, 5, 5}).contiguous(layout);
    sg2::test::RecordedOps recorded({"aten::mul"});
    const at::Tensor y = ops::scale_planes(x, styles, ops::Kernel::Auto);
    const auto d = torch::autograd::grad({y}, {x, styles}, {dy}, /*retain_graph=*/true, /*create_graph=*/true);
    torch::autograd::grad({(d[0] * dy).sum() + d[1].sum()}, {x, styles});
    int scalar_products = 0;
    for (const sg2::test::OpCall& call : recorded.take()) {
      const bool by_a_number = std::any_of(call.inputs.begin(), call.inputs.end(), [](const c10::IValue& v) {
        return v.isScalar() || (v.isTensor() && v.toTensor().defined() && v.toTensor().dim() == 0);
      });
      scalar_products += by_a_number;
    }
    EXPECT_EQ(scalar_products, 0) << layout_name(layout);
  }
}


// On a GPU, in every precision: the kernels against the composed reference ops on the same
// rounded inputs in float32 (second order only in float32: the composed gradient is LibTorch's).
// With a clamp, a reduced-precision output that rounds onto it has slope 0, so those cases compare
// the forward pass only.
TEST(CudaKernels, EpilogueMatchesTheComposedReferenceInEveryPrecision) {
  SKIP_WITHOUT_CUDA_KERNELS();
  for (const auto& [c, layout] : cases_in_both_layouts()) {
    for (const Precision& precision : kPrecisions) {
      const EpilogueInputs on_gpu = random_inputs(c, precision.type, at::kCUDA, layout);
      const auto cpu = [](const at::Tensor& t) { return t.defined() ? t.cpu() : at::Tensor(); };
      const EpilogueInputs on_cpu{on_gpu.x.cpu().to(at::kFloat), cpu(on_gpu.demod), cpu(on_gpu.noise),
                                  cpu(on_gpu.noise_strength), cpu(on_gpu.bias)};
      const bool full = precision.type == at::kFloat;
      const std::string where = c.name + ", " + layout_name(layout) + ", " + c10::toString(precision.type);
      const int64_t lanes = 16 / on_gpu.x.element_size();
      const int64_t packed_dim = kernels::epilogue_channels_last(on_gpu.x) ? c.x_shape[1] : c.x_shape[2] * c.x_shape[3];
      EXPECT_EQ(kernels::conv_epilogue_runs_fused(on_gpu.x, on_gpu.noise, ops::Kernel::Auto), packed_dim % lanes == 0)
          << where;
      const auto kernel = epilogue_derivatives(c, on_gpu, ops::Kernel::Auto, precision.type, full);
      const auto reference = epilogue_derivatives(c, on_cpu, ops::Kernel::Reference, precision.type, full);
      ASSERT_EQ(kernel.size(), reference.size()) << where;
      const size_t compared = full || c.clamp < 0 ? kernel.size() : 1;
      for (size_t i = 0; i < compared; ++i) {
        EXPECT_LT(max_relative_error(kernel[i], reference[i]), full ? 2e-5 : 4 * precision.tolerance)
            << where << ", output " << i;
      }
    }
  }
}

// On a GPU, in every precision: the modulation against the product in float32 of the same rounded
// inputs, forward and both gradients: NCHW planes of whole packs (fused) and of 9 elements
// (composed); channels_last pixels of 4 channels (fused in float32, composed in 16 bits).
TEST(CudaKernels, ScalePlanesMatchesTheProductInEveryPrecision) {
  SKIP_WITHOUT_CUDA_KERNELS();
  at::manual_seed(24);
  using at::MemoryFormat;
  for (const auto& [side, layout] : {std::pair{8, MemoryFormat::Contiguous}, std::pair{3, MemoryFormat::Contiguous},
                                      std::pair{3, MemoryFormat::ChannelsLast}}) {
    for (const Precision& precision : kPrecisions) {
      const at::Tensor x = at::randn({3, 4, side, side}).to(precision.type).contiguous(layout), s = at::randn({3, 4});
      const at::Tensor dy = at::randn({3, 4, side, side}).to(precision.type);
      const auto run = [&](const at::Tensor& x_in, const at::Tensor& s_in, ops::Kernel impl) {
        at::Tensor xv = x_in.detach().requires_grad_(true), sv = s_in.detach().requires_grad_(true);
        const at::Tensor y = ops::scale_planes(xv, sv, impl);
        const auto grads = torch::autograd::grad({y}, {xv, sv}, {dy.to(y.device(), y.scalar_type())});
        return std::vector<at::Tensor>{y.detach().cpu().to(at::kFloat), grads[0].cpu().to(at::kFloat),
                                       grads[1].cpu()};
      };
      const auto kernel = run(x.cuda(), s.cuda(), ops::Kernel::Auto);
      const auto expected = run(x.to(at::kFloat), s, ops::Kernel::Reference);
      for (size_t i = 0; i < kernel.size(); ++i) {
        EXPECT_LT(max_relative_error(kernel[i], expected[i]), 4 * precision.tolerance)
            << side << "x" << side << ", " << layout_name(layout) << ", " << c10::toString(precision.type)
            << ", output " << i;
      }
    }
  }
}

}  // namespace
}  // namespace sg2::ops
