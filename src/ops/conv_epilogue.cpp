// The synthesis layers' epilogue (conv_epilogue.h): the op, its composition, and its kernels'
// autograd function. The raw kernels are in conv_epilogue_cpu.cpp and cuda/; both compute with
// bias_act_elements.h.
#include "sg2/ops/conv_epilogue.h"

#include "bias_act_autograd.h"
#include "channel_layout.h"
#include "cpu_kernels.h"
#include "sg2/core/error.h"
#include "sg2/ops/kernels.h"
#if SG2_CUDA_KERNELS
#include "cuda/kernels_cuda.h"
#endif

#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

namespace sg2::ops {

namespace kernels {

namespace {

// What the kernels read as raw memory, checked against EpilogueTensors' contract at the entries
// that skip the op's normalisation (epilogue_tensors), so that their caller gets an error instead of
// reads of the wrong memory. Alignment is the CUDA launcher's check.
void check_epilogue_tensors(const EpilogueTensors& t) {
  SG2_CHECK(epilogue_takes_layout(t.x), "conv_epilogue kernels: x must be [N, C, H, W], contiguous or "
            "channels_last, got sizes {} strides {}", t.x.sizes(), t.x.strides());
  const auto check_floats = [&](const at::Tensor& a, const char* name, int64_t numel) {
    SG2_CHECK(a.defined() && a.scalar_type() == at::kFloat && a.is_contiguous() && a.device() == t.x.device() &&
                  a.numel() == numel,
              "conv_epilogue kernels: {} must be float32, contiguous, on {}, with {} element(s); got {}", name,
              t.x.device().str(), numel,
              a.defined() ? fmt::format("{} {} on {}", c10::toString(a.scalar_type()), a.sizes(), a.device().str())
                          : std::string("none"));
  };
  const int64_t samples = t.x.size(0), channels = t.x.size(1), plane = t.x.size(2) * t.x.size(3);
  check_floats(t.demod, "demod [N, C]", samples * channels);
  if (t.bias.defined()) check_floats(t.bias, "bias [C]", channels);
  if (t.noise.defined()) {
    const bool one_plane = t.noise.dim() == 4 && t.noise.size(0) == 1;
    check_floats(t.noise, "noise [N or 1, 1, H, W]", one_plane ? plane : samples * plane);
    check_floats(t.noise_strength, "noise_strength", 1);
  }
}

at::Tensor epilogue_on_device(const EpilogueTensors& t, const ActivationParams& a) {
#if SG2_CUDA_KERNELS
  if (t.x.is_cuda()) return gpu::conv_epilogue_forward(t, a);
#endif
  return host::conv_epilogue_forward(t, a);
}

// Without sums_of_x the sums of g * x may be left 0 (the CUDA kernel then does not read x; the CPU
// kernel computes them anyway).
EpilogueGradient gradient_on_device(const at::Tensor& dy, const at::Tensor& y, const EpilogueTensors& t,
                                    const ActivationParams& a, bool sums_of_x = true) {
#if SG2_CUDA_KERNELS
  if (t.x.is_cuda()) return gpu::conv_epilogue_grad(dy, y, t, a, sums_of_x);
#endif
  return host::conv_epilogue_grad(dy, y, t, a);
}

// The inputs of ConvEpilogueFunction in order, and which of them backward must answer.
enum EpilogueInput { kX, kDemod, kNoise, kNoiseStrength, kBias, kEpilogueTensorInputs };

// The gradients of x, demod, the noise strength and the bias (undefined where not needed).
struct EpilogueInputGradients {
  at::Tensor x, demod, noise_strength, bias;
};

// [N, C] float32 sums of g * x over each plane of [N, C, H, W] (the gradient of a per-plane
// scale): LibTorch's product and sum (operands of one layout: its vectorized loop), whose gradients
// scale the other operand's planes through the epilogue's kernels (scale_planes), not by a
// broadcast product of the expanded [N, C] gradient (LibTorch's strided loop); differentiable again
// the same way.
struct PlaneDotFunction : public torch::autograd::Function<PlaneDotFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& g, const at::Tensor& x) {
    ctx->save_for_backward({g, x});
    return (g * x).sum({2, 3}, false, at::kFloat);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &g = saved[0], &x = saved[1], &d = grads[0];  // d: [N, C]
    at::Tensor dg, dx;
    if (ctx->needs_input_grad(0)) dg = ops::scale_planes(x, d);
    if (ctx->needs_input_grad(1)) dx = ops::scale_planes(g, d);
    return {dg, dx};
  }
};

// From the pre-activation's gradient g by LibTorch ops, which autograd records when backward runs
// with create_graph (path length regularization's second order); only those `needed`.
EpilogueInputGradients composed_gradients(const at::Tensor& g, const EpilogueTensors& t,
                                          const std::function<bool(EpilogueInput)>& needed) {
  EpilogueInputGradients d;
  // g * demod per plane through the epilogue's kernels where they take g (one pass each way, where
  // a broadcast product runs LibTorch's strided loop), itself differentiable again the same way.
  if (needed(kX)) d.x = ops::scale_planes(g, t.demod);
  if (needed(kDemod)) d.demod = PlaneDotFunction::apply(g, t.x);
  if (needed(kNoiseStrength)) d.noise_strength = (g * t.noise.to(g.scalar_type())).sum(at::kFloat);
  if (needed(kBias)) d.bias = g.sum({0, 2, 3}, false, at::kFloat);
  return d;
}

// From the gradient kernel's plane sums [N, C, 3] (g * x, g, g * noise).
EpilogueInputGradients kernel_gradients(const EpilogueGradient& grad,
                                        const std::function<bool(EpilogueInput)>& needed) {
  EpilogueInputGradients d{grad.dx, grad.plane_sums.select(2, 0), at::Tensor(), at::Tensor()};
  if (needed(kNoiseStrength)) d.noise_strength = grad.plane_sums.select(2, 2).sum();
  if (needed(kBias)) d.bias = grad.plane_sums.select(2, 1).sum(0);
  return d;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y = clamp(act(x * demod + noise * noise_strength + b) * gain) on EpilogueTensors (noise, its
// strength and b: placeholders unless has_noise / has_bias). Backward runs the gradient kernel, one
// pass that also takes the sums, unless autograd records it (create_graph): then bias_act's
// differentiable gradient and LibTorch's ops, so that the gradient has a gradient of its own.
struct ConvEpilogueFunction : public torch::autograd::Function<ConvEpilogueFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                            const at::Tensor& noise_strength, const at::Tensor& b, bool has_noise, bool has_bias,
                            int64_t act, double alpha, double gain, double clamp) {
    const ActivationParams a{static_cast<int>(act), static_cast<float>(alpha), static_cast<float>(gain),
                             static_cast<float>(clamp)};
    const EpilogueTensors t{x, demod, has_noise ? noise : at::Tensor(), has_noise ? noise_strength : at::Tensor(),
                            has_bias ? b : at::Tensor()};
    at::Tensor y = epilogue_on_device(t, a);
    ctx->save_for_backward({x, demod, t.noise, t.noise_strength, needs_output(a) ? y : at::Tensor()});
    ctx->saved_data["activation"] = to_saved(a);
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const EpilogueTensors t{saved[0], saved[1], saved[2], saved[3], at::Tensor()};
    const at::Tensor& y = saved[4];  // undefined where the slope is constant (linear, no clamp)
    const ActivationParams a = from_saved(ctx->saved_data["activation"]);
    const auto needed = [&](EpilogueInput input) { return ctx->needs_input_grad(input); };
    EpilogueInputGradients d;
    if (at::GradMode::is_enabled()) {
      d = composed_gradients(differentiable_bias_act_gradient(grads[0], y, a), t, needed);
    } else {  // without y the kernel reads dy in its place: any values give the constant slope
      const at::Tensor dy = aligned(laid_out_like(grads[0], t.x));  // x's type and layout
      d = kernel_gradients(gradient_on_device(dy, y.defined() ? y : dy, t, a), needed);
    }
    variable_list out(kEpilogueTensorInputs + 6);  // the tensors', then the flags' and the activation's
    out[kX] = d.x;
    out[kDemod] = d.demod;
    if (d.noise_strength.defined()) out[kNoiseStrength] = d.noise_strength.reshape(t.noise_strength.sizes());
    out[kBias] = d.bias;
    return out;
  }
};

// The op's arguments as the kernels take them: float32, contiguous and aligned but for x.
EpilogueTensors epilogue_tensors(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                                 const at::Tensor& noise_strength, const at::Tensor& b) {
  const at::TensorOptions floats = x.options().dtype(at::kFloat);
  const auto as_floats = [&](const at::Tensor& t) { return t.defined() ? contiguous_aligned(t.to(floats)) : t; };
  return {x, as_floats(demod), as_floats(noise), as_floats(noise_strength), as_floats(b)};
}

at::Tensor conv_epilogue(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                         const at::Tensor& noise_strength, const at::Tensor& b, const ops::BiasActParams& p) {
  RECORD_FUNCTION("sg2::conv_epilogue", std::vector<c10::IValue>());
  const EpilogueTensors t = epilogue_tensors(x, demod, noise, noise_strength, b);
  const ActivationParams a = resolve(p);
  return ConvEpilogueFunction::apply(t.x, t.demod, or_placeholder(t.noise, t.demod),
                                     or_placeholder(t.noise_strength, t.demod), or_placeholder(t.bias, t.demod),
                                     t.noise.defined(), t.bias.defined(), a.act, a.alpha, a.gain, a.clamp);
}

}  // namespace

bool conv_epilogue_runs_fused(const at::Tensor& x, const at::Tensor& noise, Kernel kernel) {
  if (kernel != Kernel::Auto || !supported(x) || !epilogue_takes_layout(x)) return false;
  if (noise.defined() && noise.requires_grad()) return false;  // the kernels give the noise no gradient
#if SG2_CUDA_KERNELS
  if (x.is_cuda()) return gpu::epilogue_runs_packed(x);
#endif
  return true;
}

at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const ops::BiasActParams& p) {
  check_epilogue_tensors(t);
  return epilogue_on_device(t, resolve(p));
}

EpilogueGradient conv_epilogue_gradient(const at::Tensor& dy, const at::Tensor& y, const EpilogueTensors& t,
                                        const ops::BiasActParams& p) {
  check_epilogue_tensors(t);
  return gradient_on_device(dy, y, t, resolve(p));
}

std::optional<std::pair<at::Tensor, at::Tensor>> bias_act_gradient_with_bias_sums(const at::Tensor& dy,
                                                                                   const at::Tensor& y, int64_t dim,
                                                                                   const ActivationParams& a) {
  if (!y.defined() || dim != 1 || !epilogue_takes_layout(y) || dy.sizes() != y.sizes()) return std::nullopt;
#if SG2_CUDA_KERNELS
  if (y.is_cuda() && !gpu::epilogue_runs_packed(y)) return std::nullopt;
#endif
  if (!y.is_cuda() && y.scalar_type() != at::kFloat) return std::nullopt;  // the CPU kernel's one type
  const at::Tensor g = aligned(laid_out_like(dy, y));
  // g stands in for x, for its shape and layout: the sums of g * x go unused, so x is not read.
  const EpilogueTensors t{g, at::ones({y.size(0), y.size(1)}, y.options().dtype(at::kFloat)), at::Tensor(),
                          at::Tensor(), at::Tensor()};
  const EpilogueGradient grad = gradient_on_device(g, y, t, a, /*sums_of_x=*/false);
  return std::make_pair(grad.dx, grad.plane_sums.select(2, 1).sum(0));  // [N, C, 3] -> [C]
}

}  // namespace kernels

namespace {

void check_epilogue_arguments(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                              const at::Tensor& noise_strength, const at::Tensor& b, const BiasActParams& p) {
  SG2_CHECK(x.dim() == 4 && p.dim == 1, "demodulate_noise_bias_act: expected x [N, C, H, W] and dim 1, got {} and {}",
            x.sizes(), p.dim);
  SG2_CHECK(demod.defined(), "demodulate_noise_bias_act: no demodulation coefficients (a modulated convolution "
                             "without demodulate has none)");
  SG2_CHECK(demod.sizes() == at::IntArrayRef({x.size(0), x.size(1)}),
            "demodulate_noise_bias_act: demodulation coefficients {} do not match x {}", demod.sizes(), x.sizes());
  SG2_CHECK(noise.defined() == noise_strength.defined(),
            "demodulate_noise_bias_act: noise and noise strength come together");
  SG2_CHECK(!noise.defined() || (noise.dim() == 4 && (noise.size(0) == 1 || noise.size(0) == x.size(0)) &&
                                 noise.size(1) == 1 && noise.size(2) == x.size(2) && noise.size(3) == x.size(3)),
            "demodulate_noise_bias_act: noise {} is not [N or 1, 1, H, W] for x {}", noise.sizes(), x.sizes());
  SG2_CHECK(!noise_strength.defined() || noise_strength.numel() == 1,
            "demodulate_noise_bias_act: noise strength {} is not one value", noise_strength.sizes());
  SG2_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == x.size(1)),
            "demodulate_noise_bias_act: bias {} does not match x {} (expected [C])", b.sizes(), x.sizes());
}

}  // namespace

at::Tensor demodulate_noise_bias_act_composed(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                                              const at::Tensor& noise_strength, const at::Tensor& b,
                                              const BiasActParams& p, const ComputeSettings& compute) {
  const at::Tensor scale = demod.to(x.scalar_type()).reshape({x.size(0), -1, 1, 1});
  const at::Tensor y =
      noise.defined() ? at::addcmul((noise * noise_strength).to(x.scalar_type()), x, scale) : x * scale;
  return bias_act(y, b.defined() ? b.to(y.scalar_type()) : b, p, compute);
}

at::Tensor scale_planes(const at::Tensor& x, const at::Tensor& scale, const ComputeSettings& compute) {
  SG2_CHECK(scale.defined(), "scale_planes: no scale");
  SG2_CHECK(x.dim() == 4 && scale.sizes() == at::IntArrayRef({x.size(0), x.size(1)}),
            "scale_planes: scale {} does not match x {} (expected [N, C] for [N, C, H, W])", scale.sizes(), x.sizes());
  if (!kernels::conv_epilogue_runs_fused(x, at::Tensor(), compute.kernel)) {
    return x * scale.to(x.scalar_type()).reshape({x.size(0), -1, 1, 1});
  }
  return kernels::conv_epilogue(x, scale, at::Tensor(), at::Tensor(), at::Tensor(), BiasActParams{});
}

at::Tensor demodulate_noise_bias_act(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                                     const at::Tensor& noise_strength, const at::Tensor& b, const BiasActParams& p,
                                     const ComputeSettings& compute) {
  check_epilogue_arguments(x, demod, noise, noise_strength, b, p);
  const bool hooked = p.act != Activation::Linear && compute.pre_activation;
  if (hooked || !kernels::conv_epilogue_runs_fused(x, noise, compute.kernel)) {
    return demodulate_noise_bias_act_composed(x, demod, noise, noise_strength, b, p, compute);
  }
  return kernels::conv_epilogue(x, demod, noise, noise_strength, b, p);
}

}  // namespace sg2::ops
