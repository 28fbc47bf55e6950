// The synthesis layers' epilogue and input modulation (sg2/nn/conv_epilogue.h): their kernels
// against the reference's composition (addcmul, then bias_act's reference ops; the product),
// forward, the gradient kernel's pass and its sums, and second order through the composed gradient;
// on the CPU at every CPU level, on a GPU in every precision; the CUDA kernels' per-pack and
// per-lane arithmetic on the host; and where the ops compose instead. Both layouts throughout:
// NCHW, and channels_last (NHWC memory, kept from x to y and dx).
#include "sg2/nn/conv_epilogue.h"
#include "sg2/nn/ops.h"
#include "bias_act_autograd.h"
#include "channel_layout.h"
#include "cuda/epilogue_elements.h"
#include "nn_test_support.h"
#include "recorded_ops.h"
#include "test_support.h"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <algorithm>
#include <string>
#include <vector>

namespace sg2::nn {
namespace {

using test::kPrecisions;
using test::LevelGuard;
using test::max_relative_error;
using test::Precision;

struct EpilogueCase {
  std::string name;
  std::vector<int64_t> x_shape;
  int64_t noise_batch;  // 0: no noise
  bool bias;
  ops::Activation act;
  double clamp;
};

// Planes of 25 (no whole number of vectors or packs), 64 (partial sums only), 256 (more packs than
// a warp has lanes), 1024 (channels_last on a GPU: several blocks a sample), 1600 (channels_last:
// more pixels than the CPU's runs) and 1 (channels_last and contiguous at once: runs as NCHW);
// per-sample noise, one plane for the batch, none; 3 and 2 channels (no whole packs of channels), 4
// (one float32 pack), 8, 16 and 64 (whole packs in every precision) and 24 (packs of 8 or 4 that
// leave threads of a channels_last gradient block idle).
std::vector<EpilogueCase> epilogue_cases() {
  return {{"lrelu, clamp, per-sample noise, 5x5", {2, 3, 5, 5}, 2, true, ops::Activation::LRelu, 1.5},
          {"lrelu, one noise plane, 8x8", {3, 4, 8, 8}, 1, true, ops::Activation::LRelu, -1},
          {"linear, no noise, no bias, 4x4", {2, 2, 4, 4}, 0, false, ops::Activation::Linear, -1},
          {"relu, clamp, 16x16", {2, 2, 16, 16}, 2, true, ops::Activation::Relu, 2.0},
          {"lrelu, clamp, per-sample noise, 16 channels, 5x5", {2, 16, 5, 5}, 2, true, ops::Activation::LRelu, 1.5},
          {"linear, no noise, no bias, 8 channels, 3x3", {3, 8, 3, 3}, 0, false, ops::Activation::Linear, -1},
          {"lrelu, per-sample noise, 8 channels, 40x40", {2, 8, 40, 40}, 2, true, ops::Activation::LRelu, -1},
          {"lrelu, clamp, one noise plane, 24 channels, 6x6", {2, 24, 6, 6}, 1, true, ops::Activation::LRelu, 1.0},
          {"lrelu, per-sample noise, 64 channels, 32x32", {2, 64, 32, 32}, 2, true, ops::Activation::LRelu, -1},
          {"relu, per-sample noise, 8 channels, 1x1", {3, 8, 1, 1}, 3, true, ops::Activation::Relu, -1}};
}

constexpr at::MemoryFormat kLayouts[] = {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast};

std::string layout_name(at::MemoryFormat layout) {
  return layout == at::MemoryFormat::ChannelsLast ? "channels_last" : "NCHW";
}

std::vector<std::pair<EpilogueCase, at::MemoryFormat>> cases_in_both_layouts() {
  std::vector<std::pair<EpilogueCase, at::MemoryFormat>> out;
  for (const EpilogueCase& c : epilogue_cases()) {
    for (const at::MemoryFormat layout : kLayouts) out.emplace_back(c, layout);
  }
  return out;
}

ops::BiasActParams params_of(const EpilogueCase& c) {
  ops::BiasActParams p;
  p.act = c.act;
  p.clamp = c.clamp;
  return p;
}

// The op's inputs: x in `type` on `device`, the rest float32 as the layers hold them.
struct EpilogueInputs {
  at::Tensor x, demod, noise, noise_strength, bias;
};

EpilogueInputs random_inputs(const EpilogueCase& c, at::ScalarType type, at::Device device,
                             at::MemoryFormat layout = at::MemoryFormat::Contiguous) {
  at::manual_seed(21);
  const int64_t n = c.x_shape[0], channels = c.x_shape[1];
  const at::TensorOptions floats = at::TensorOptions().device(device);
  EpilogueInputs in;
  in.x = at::randn(c.x_shape).to(device, type).contiguous(layout);
  in.demod = (at::rand({n, channels}) + 0.5).to(floats);
  if (c.noise_batch > 0) {
    in.noise = at::randn({c.noise_batch, 1, c.x_shape[2], c.x_shape[3]}).to(floats);
    in.noise_strength = at::tensor(0.7f).to(floats);
  }
  if (c.bias) in.bias = at::randn({channels}).to(floats);
  return in;
}

// The inputs that take gradients, as leaves of their own.
std::vector<at::Tensor> leaves(const EpilogueInputs& in) {
  std::vector<at::Tensor> out{in.x.detach().clone().requires_grad_(true), in.demod.detach().clone().requires_grad_(true)};
  if (in.noise_strength.defined()) out.push_back(in.noise_strength.detach().clone().requires_grad_(true));
  if (in.bias.defined()) out.push_back(in.bias.detach().clone().requires_grad_(true));
  return out;
}

at::Tensor run_op(const EpilogueCase& c, const EpilogueInputs& in, const std::vector<at::Tensor>& v, ops::Impl impl) {
  const at::Tensor strength = in.noise_strength.defined() ? v[2] : at::Tensor();
  const at::Tensor bias = in.bias.defined() ? v.back() : at::Tensor();
  return ops::demodulate_noise_bias_act(v[0], v[1], in.noise, strength, bias, params_of(c), impl);
}

// y; the first derivatives of L = sum(y * g) without create_graph (the gradient kernel where the
// kernels ran); with create_graph, the second derivatives of sum(dL/dx * u) + sum(dL/d demod) (the
// composed gradient). g and u are rounded to `rounding` first, so that runs in different types see
// the same ones.
std::vector<at::Tensor> epilogue_derivatives(const EpilogueCase& c, const EpilogueInputs& in, ops::Impl impl,
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
    ASSERT_TRUE(kernels::conv_epilogue_runs_fused(in.x, in.noise, ops::Impl::Fast)) << where;
    const auto reference = epilogue_derivatives(c, in, ops::Impl::Reference);
    for (cpu::Level level : cpu::supported_levels()) {
      cpu::force_cpu_level(level);
      const auto kernel = epilogue_derivatives(c, in, ops::Impl::Fast);
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
    const at::Tensor y = run_op(c, in, v, ops::Impl::Fast);
    const at::Tensor dx = torch::autograd::grad({y}, {v[0]}, {at::ones_like(y)})[0];
    EXPECT_TRUE(y.is_contiguous(layout)) << layout_name(layout);
    EXPECT_TRUE(dx.is_contiguous(layout)) << layout_name(layout);
  }
}

TEST(ConvEpilogue, RunsItsKernelsOnlyWhereTheyApply) {
  const EpilogueCase c = epilogue_cases()[0];
  const EpilogueInputs in = random_inputs(c, at::kFloat, at::kCPU);
  const auto made_by = [&](const at::Tensor& x, ops::Impl impl) {
    const at::Tensor y = ops::demodulate_noise_bias_act(x.requires_grad_(true), in.demod, in.noise,
                                                        in.noise_strength, in.bias, params_of(c), impl);
    return y.grad_fn()->name();
  };
  EXPECT_NE(made_by(in.x.clone(), ops::Impl::Fast).find("ConvEpilogueFunction"), std::string::npos);
  EXPECT_EQ(made_by(in.x.clone(), ops::Impl::Reference).find("ConvEpilogueFunction"), std::string::npos);
  const at::Tensor channels_last = in.x.contiguous(at::MemoryFormat::ChannelsLast);
  EXPECT_NE(made_by(channels_last.clone(), ops::Impl::Fast).find("ConvEpilogueFunction"), std::string::npos);
  const at::Tensor strided = at::randn({2, 3, 5, 10}).slice(3, 0, 10, 2);  // neither layout: composed
  EXPECT_FALSE(kernels::conv_epilogue_runs_fused(strided, in.noise, ops::Impl::Fast));
  EXPECT_EQ(made_by(strided, ops::Impl::Fast).find("ConvEpilogueFunction"), std::string::npos);
  EXPECT_FALSE(kernels::conv_epilogue_runs_fused(in.x, in.noise.clone().requires_grad_(true), ops::Impl::Fast));
  EXPECT_FALSE(kernels::conv_epilogue_runs_fused(in.x.to(at::kDouble), in.noise, ops::Impl::Fast));
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
  const auto run = [&](const at::Tensor& x_in, ops::Impl impl) {
    at::Tensor x = x_in.clone().requires_grad_(true), s = s0.clone().requires_grad_(true);
    at::Tensor y = ops::scale_planes(x, s, impl);
    std::vector<at::Tensor> out{y.detach()};
    for (const auto& d : torch::autograd::grad({(y * g).sum()}, {x, s})) out.push_back(d);
    y = ops::scale_planes(x, s, impl);
    const auto first = torch::autograd::grad({(y.square() * g).sum()}, {x, s}, {}, true, /*create_graph=*/true);
    for (const auto& d : torch::autograd::grad({(first[0] * g).sum() + first[1].sum()}, {x, s})) out.push_back(d);
    return std::make_pair(out, std::string(y.grad_fn()->name()));
  };
  const auto [reference, reference_node] = run(x0, ops::Impl::Reference);
  EXPECT_EQ(reference_node.find("ConvEpilogueFunction"), std::string::npos) << reference_node;
  for (const at::MemoryFormat layout : kLayouts) {
    const at::Tensor x = x0.contiguous(layout);
    for (cpu::Level level : cpu::supported_levels()) {
      cpu::force_cpu_level(level);
      const auto [kernel, kernel_node] = run(x, ops::Impl::Fast);
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
      const at::Tensor y = modulation ? ops::scale_planes(x, demod, ops::Impl::Fast)
                                      : ops::demodulate_noise_bias_act(x, demod, at::Tensor(), at::Tensor(), b, lrelu,
                                                                       ops::Impl::Fast);
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
    const at::Tensor y = ops::scale_planes(x, styles, ops::Impl::Fast);
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

// The CUDA kernels' memory as the host sees it: float32 packs of four.
struct HostEpilogueMemory {
  static constexpr int kLanes = 4;
  const float *x, *dy, *y;
  float* dx;
  using Pack = float[kLanes];
  static void copy(const float* from, Pack& to) {
    for (int k = 0; k < kLanes; ++k) to[k] = from[k];
  }
  void load_x(int32_t pack, Pack& v) const { copy(x + pack * kLanes, v); }
  void load_dy(int32_t pack, Pack& v) const { copy(dy + pack * kLanes, v); }
  void load_y(int32_t pack, Pack& v) const { copy(y + pack * kLanes, v); }
  void load_floats(const float* p, int32_t offset, Pack& v) const { copy(p + offset, v); }
  void store_dx(int32_t pack, const Pack& v) const {
    for (int k = 0; k < kLanes; ++k) dx[pack * kLanes + k] = v[k];
  }
};

// A case on the host for the CUDA kernels' functions: float32 x in `layout`, dy, y and dx laid out
// alike (y and dx NaN until written), and the reference's y and gradients of sum(y * dy).
struct HostKernelRun {
  EpilogueInputs in;
  cuda::EpilogueLaunch job;
  kernels::ActivationParams a{};
  at::Tensor y, dy, dx, expected_y;
  std::vector<at::Tensor> expected_grads;  // x, demod, then the noise strength and bias where present

  HostEpilogueMemory memory() const {
    return {in.x.data_ptr<float>(), dy.data_ptr<float>(), y.data_ptr<float>(), dx.data_ptr<float>()};
  }
  int64_t packs() const { return in.x.numel() / HostEpilogueMemory::kLanes; }
};

HostKernelRun host_kernel_run(const EpilogueCase& c, at::MemoryFormat layout) {
  HostKernelRun r;
  r.in = random_inputs(c, at::kFloat, at::kCPU, layout);
  r.job = kernels::epilogue_launch({r.in.x, r.in.demod, r.in.noise, r.in.noise_strength, r.in.bias});
  r.a = kernels::resolve(params_of(c));
  r.y = at::full(c.x_shape, NAN).contiguous(layout);
  r.dx = at::full(c.x_shape, NAN).contiguous(layout);
  r.dy = at::randn(c.x_shape).contiguous(layout);
  const std::vector<at::Tensor> v = leaves(r.in);
  const at::Tensor y = run_op(c, r.in, v, ops::Impl::Reference);
  r.expected_y = y.detach();
  r.expected_grads = torch::autograd::grad({(y * r.dy).sum()}, v);
  return r;
}

// Runs pack_values(pack, v) over every pack and stores v into r.y's memory.
template <typename PackValues>
void host_forward(HostKernelRun& r, PackValues pack_values) {
  float* y = r.y.data_ptr<float>();
  for (int32_t pack = 0; pack < r.packs(); ++pack) {
    float v[HostEpilogueMemory::kLanes];
    pack_values(pack, v);
    for (int k = 0; k < HostEpilogueMemory::kLanes; ++k) y[pack * HostEpilogueMemory::kLanes + k] = v[k];
  }
}

// dx and the kernels' plane sums [N * C, 3] (g * x, g, g * noise) against the reference's gradients.
void expect_gradient_matches(const HostKernelRun& r, const at::Tensor& sums, const std::string& where) {
  const int64_t n = r.in.x.size(0);
  const std::vector<at::Tensor>& grads = r.expected_grads;
  EXPECT_LT(max_relative_error(r.dx, grads[0]), 1e-6) << where;
  EXPECT_LT(max_relative_error(sums.select(1, 0).reshape({n, -1}), grads[1]), 1e-5) << where;
  if (r.in.noise_strength.defined()) {
    EXPECT_LT(max_relative_error(sums.select(1, 2).sum(), grads[2]), 1e-5) << where;
  }
  if (r.in.bias.defined()) {
    EXPECT_LT(max_relative_error(sums.select(1, 1).reshape({n, -1}).sum(0), grads.back()), 1e-5) << where;
  }
}

at::Tensor sums_tensor(const std::vector<kernels::EpilogueSums>& sums) {
  at::Tensor out = at::empty({static_cast<int64_t>(sums.size()), 3});
  for (size_t p = 0; p < sums.size(); ++p) out[p] = at::tensor({sums[p].g_x, sums[p].g, sums[p].g_noise});
  return out;
}

// NCHW: the gradient kernel on the host, r.job.chunks runs of each plane, every lane of each run's
// warp: dx into r.dx (NaN until written), and the lanes' sums added up, [planes, 3].
at::Tensor host_gradient_lanes(HostKernelRun& r, const HostEpilogueMemory& memory) {
  constexpr int kWarp = 32, kLanes = HostEpilogueMemory::kLanes;
  r.dx.fill_(NAN);
  std::vector<kernels::EpilogueSums> sums(r.job.planes);
  for (int32_t plane = 0; plane < r.job.planes; ++plane) {
    for (int32_t chunk = 0; chunk < r.job.chunks; ++chunk) {
      for (int lane = 0; lane < kWarp; ++lane) {
        sums[plane].add(cuda::epilogue_grad_lane<kLanes, int32_t>(r.job, r.a, plane, chunk, lane, kWarp, memory));
      }
    }
  }
  return sums_tensor(sums);
}

// channels_last: the gradient kernel on the host, r.job.chunks runs of each sample's pixels, every
// thread of each run's block of row_groups rows: dx into r.dx, and the threads' sums added up.
at::Tensor host_gradient_pixels(HostKernelRun& r, const HostEpilogueMemory& memory, int32_t row_groups) {
  constexpr int kLanes = HostEpilogueMemory::kLanes;
  const auto channels = static_cast<int32_t>(r.job.channels), packs_per_pixel = channels / kLanes;
  r.dx.fill_(NAN);
  std::vector<kernels::EpilogueSums> sums(r.job.planes);
  for (int32_t n = 0; n < r.job.planes / channels; ++n) {
    for (int32_t chunk = 0; chunk < r.job.chunks; ++chunk) {
      for (int32_t group = 0; group < row_groups; ++group) {
        for (int32_t pack = 0; pack < packs_per_pixel; ++pack) {
          kernels::EpilogueSums thread[kLanes];
          cuda::epilogue_grad_pixels<kLanes, int32_t>(r.job, r.a, n, chunk, pack, group, row_groups, memory, thread);
          for (int k = 0; k < kLanes; ++k) sums[n * channels + pack * kLanes + k].add(thread[k]);
        }
      }
    }
  }
  return sums_tensor(sums);
}

// NCHW: every pack of the forward kernel and every lane of every warp of the gradient kernel, run on
// the host, against the composed reference: y, dx, and the lanes' sums added up.
TEST(CudaKernelArithmetic, EpiloguePacksAndWarpLanesMatchTheComposedReference) {
  constexpr int kLanes = HostEpilogueMemory::kLanes;
  for (const EpilogueCase& c : epilogue_cases()) {
    if (c.x_shape[2] * c.x_shape[3] % kLanes != 0) continue;  // the kernels compose these
    HostKernelRun r = host_kernel_run(c, at::MemoryFormat::Contiguous);
    const HostEpilogueMemory memory = r.memory();
    host_forward(r, [&](int32_t pack, float (&v)[kLanes]) {
      cuda::epilogue_pack<kLanes, int32_t>(r.job, r.a, pack, memory, v);
    });
    EXPECT_LT(max_relative_error(r.y, r.expected_y), 1e-6) << c.name;

    // Gradient, chunk by chunk of each plane (5: more chunks than some planes fill), lane by lane.
    for (const int32_t chunks : {1, 3, 5}) {
      r.job.chunks = chunks;
      expect_gradient_matches(r, host_gradient_lanes(r, memory), c.name + ", " + std::to_string(chunks) + " chunks");
    }
  }
}

// channels_last: every pack of the forward kernel (a pixel's channels), and every thread of every
// block of the gradient kernel for a few shapes of block (row groups) and splits of the pixels
// (chunks: 5 is more than some samples fill), run on the host against the composed reference.
TEST(CudaKernelArithmetic, EpiloguePixelPacksAndBlockThreadsMatchTheComposedReference) {
  constexpr int kLanes = HostEpilogueMemory::kLanes;
  int cases = 0;
  for (const EpilogueCase& c : epilogue_cases()) {
    if (c.x_shape[1] % kLanes != 0) continue;         // the kernels compose these
    if (c.x_shape[2] * c.x_shape[3] == 1) continue;  // contiguous as well: runs as NCHW
    ++cases;
    HostKernelRun r = host_kernel_run(c, at::MemoryFormat::ChannelsLast);
    ASSERT_TRUE(r.job.channels_last) << c.name;
    const HostEpilogueMemory memory = r.memory();
    host_forward(r, [&](int32_t pack, float (&v)[kLanes]) {
      cuda::epilogue_pixel_pack<kLanes, int32_t>(r.job, r.a, pack, memory, v);
    });
    EXPECT_LT(max_relative_error(r.y, r.expected_y), 1e-6) << c.name;

    for (const auto& [row_groups, chunks] : {std::pair{1, 1}, std::pair{3, 2}, std::pair{64, 5}}) {
      r.job.chunks = chunks;
      expect_gradient_matches(r, host_gradient_pixels(r, memory, row_groups),
                              c.name + ", " + std::to_string(row_groups) + " row groups, " + std::to_string(chunks) +
                                  " chunks");
    }
  }
  EXPECT_EQ(cases, 6);
}

// A launch without x (bias_act's gradient with its bias sums, where g stands in for x): in both
// layouts the same dx and sums of g and g * noise as with x, bit for bit, the sums of g * x 0, and x
// never read (its memory NaN here, which a read would carry into the sums).
TEST(CudaKernelArithmetic, EpilogueGradientWithoutXLeavesItsSumsZeroAndTheRestAsWithX) {
  int cases = 0;
  for (const auto& [c, layout] : cases_in_both_layouts()) {
    const bool channels_last = layout == at::MemoryFormat::ChannelsLast;
    if ((channels_last ? c.x_shape[1] : c.x_shape[2] * c.x_shape[3]) % HostEpilogueMemory::kLanes != 0) continue;
    HostKernelRun r = host_kernel_run(c, layout);
    if (r.job.channels_last != channels_last) continue;  // 1x1 pixels run as NCHW
    ++cases;
    r.y.copy_(r.expected_y);
    const auto gradient = [&](const HostEpilogueMemory& memory) {
      const at::Tensor sums = channels_last ? host_gradient_pixels(r, memory, 3) : host_gradient_lanes(r, memory);
      return std::make_pair(sums, r.dx.clone());  // dx written by the line above
    };
    const auto [sums, dx] = gradient(r.memory());
    const at::Tensor poisoned_x = at::full_like(r.in.x, NAN);
    HostEpilogueMemory without_x = r.memory();
    without_x.x = poisoned_x.data_ptr<float>();
    r.job.x = nullptr;
    const auto [sums_without_x, dx_without_x] = gradient(without_x);
    const std::string where = c.name + ", " + layout_name(layout);
    EXPECT_TRUE(dx_without_x.equal(dx)) << where;
    EXPECT_TRUE(sums_without_x.select(1, 0).eq(0).all().item<bool>()) << where;
    EXPECT_TRUE(sums_without_x.slice(1, 1).equal(sums.slice(1, 1))) << where;
  }
  EXPECT_GE(cases, 6);
}

TEST(CudaKernelArithmetic, EpilogueGradientSplitsPlanesAcrossEnoughWarps) {
  EXPECT_EQ(cuda::epilogue_grad_chunks(4096, 8192), 2);  // config-f 256x256, batch 32: 4096 planes already
  EXPECT_EQ(cuda::epilogue_grad_chunks(128, 131072), 64);  // 1024x1024, 4 x 32 planes
  EXPECT_EQ(cuda::epilogue_grad_chunks(16384, 2), 1);      // 4x4 planes: one warp each
  EXPECT_EQ(cuda::epilogue_grad_chunks(8, 100), 1);        // small planes stay whole
  // channels_last, float16 (packs of 8 channels): 256x256 with 128 channels, batch 32: 16 threads a
  // pixel, 16 row groups, 32 blocks a sample; 1024x1024 with 32 channels, batch 4: 256 blocks a
  // sample; 4x4 with 512 channels: one block a sample.
  EXPECT_EQ(cuda::epilogue_row_groups(16), 16);
  EXPECT_EQ(cuda::epilogue_grad_pixel_chunks(32, 65536, 16), 32);
  EXPECT_EQ(cuda::epilogue_grad_pixel_chunks(4, 1048576, 4), 256);
  EXPECT_EQ(cuda::epilogue_grad_pixel_chunks(32, 16, 64), 1);
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
      EXPECT_EQ(kernels::conv_epilogue_runs_fused(on_gpu.x, on_gpu.noise, ops::Impl::Fast), packed_dim % lanes == 0)
          << where;
      const auto kernel = epilogue_derivatives(c, on_gpu, ops::Impl::Fast, precision.type, full);
      const auto reference = epilogue_derivatives(c, on_cpu, ops::Impl::Reference, precision.type, full);
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
      const auto run = [&](const at::Tensor& x_in, const at::Tensor& s_in, ops::Impl impl) {
        at::Tensor xv = x_in.detach().requires_grad_(true), sv = s_in.detach().requires_grad_(true);
        const at::Tensor y = ops::scale_planes(xv, sv, impl);
        const auto grads = torch::autograd::grad({y}, {xv, sv}, {dy.to(y.device(), y.scalar_type())});
        return std::vector<at::Tensor>{y.detach().cpu().to(at::kFloat), grads[0].cpu().to(at::kFloat),
                                       grads[1].cpu()};
      };
      const auto kernel = run(x.cuda(), s.cuda(), ops::Impl::Fast);
      const auto expected = run(x.to(at::kFloat), s, ops::Impl::Reference);
      for (size_t i = 0; i < kernel.size(); ++i) {
        EXPECT_LT(max_relative_error(kernel[i], expected[i]), 4 * precision.tolerance)
            << side << "x" << side << ", " << layout_name(layout) << ", " << c10::toString(precision.type)
            << ", output " << i;
      }
    }
  }
}

}  // namespace
}  // namespace sg2::nn
