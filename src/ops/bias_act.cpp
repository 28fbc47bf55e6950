// bias_act: the op, its reference, and its kernel's autograd functions (see bias_act.h). The raw
// kernels it runs are in bias_act_cpu.cpp and cuda/; both compute with bias_act_elements.h.
#include "sg2/ops/bias_act.h"

#include "bias_act_autograd.h"
#include "cpu_kernels.h"
#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"
#include "sg2/ops/kernels.h"
#if SG2_CUDA_KERNELS
#include "cuda/kernels_cuda.h"
#endif

#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace sg2::ops {

namespace {
constexpr EnumNames<Activation, 3> kActivations{
    {{Activation::Linear, "linear"}, {Activation::Relu, "relu"}, {Activation::LRelu, "lrelu"}}};
}  // namespace

Activation parse_activation(const std::string& name) { return parse_enum(kActivations, name, "activation"); }
std::string to_string(Activation act) { return enum_name(kActivations, act); }

double default_gain(Activation act) { return act == Activation::Linear ? 1.0 : std::sqrt(2.0); }
double default_alpha(Activation act) { return act == Activation::LRelu ? 0.2 : 0.0; }

at::Tensor add_bias(const at::Tensor& x, const at::Tensor& b, int64_t dim) {
  if (!b.defined()) return x;
  SG2_CHECK(b.dim() == 1 && b.size(0) == x.size(dim), "bias_act: bias of shape {} does not match x {} at dim {}",
            b.sizes(), x.sizes(), dim);
  std::vector<int64_t> shape(x.dim(), 1);
  shape[dim] = -1;
  return x + b.reshape(shape);
}

at::Tensor bias_act_reference(const at::Tensor& x_in, const at::Tensor& b, const BiasActParams& p) {
  at::Tensor x = add_bias(x_in, b, p.dim);
  const double alpha = p.alpha >= 0 ? p.alpha : default_alpha(p.act);
  const double gain = p.gain >= 0 ? p.gain : default_gain(p.act);
  if (p.act == Activation::Relu) x = at::relu(x);
  if (p.act == Activation::LRelu) x = at::leaky_relu(x, alpha);
  if (gain != 1.0) x = x * gain;
  if (p.clamp >= 0) x = x.clamp(-p.clamp, p.clamp);
  return x;
}

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p, const ComputeSettings& compute) {
  const bool kernel = kernels::runs_kernel(compute.kernel, x);
  // With a pre-activation hook (the parity checks' kink pinning), the bias is added first (the same
  // single float32 addition) so that the hook sees the pre-activations before the activation.
  if (p.act != Activation::Linear && compute.pre_activation) {
    const at::Tensor v = compute.pre_activation(add_bias(x, b, p.dim));
    return kernel ? kernels::bias_act(v, at::Tensor(), p, compute.kernel) : bias_act_reference(v, at::Tensor(), p);
  }
  return kernel ? kernels::bias_act(x, b, p, compute.kernel) : bias_act_reference(x, b, p);
}

namespace kernels {

ActivationParams resolve(const ops::BiasActParams& p) {
  return {static_cast<int>(p.act), static_cast<float>(p.alpha >= 0 ? p.alpha : ops::default_alpha(p.act)),
          static_cast<float>(p.gain >= 0 ? p.gain : ops::default_gain(p.act)), static_cast<float>(p.clamp)};
}

bool needs_output(const ActivationParams& a) {
  return a.act != static_cast<int>(ops::Activation::Linear) || a.clamp >= 0;
}

std::vector<double> to_saved(const ActivationParams& a) { return {static_cast<double>(a.act), a.alpha, a.gain, a.clamp}; }

ActivationParams from_saved(const c10::IValue& saved) {
  const auto v = saved.toDoubleVector();
  return {static_cast<int>(v[0]), static_cast<float>(v[1]), static_cast<float>(v[2]), static_cast<float>(v[3])};
}

at::Tensor or_placeholder(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : at::empty({0}, like.options());
}

namespace {

at::Tensor bias_act_on_device(const at::Tensor& x, const at::Tensor& b, int64_t dim, const ActivationParams& a,
                              [[maybe_unused]] Kernel kernel) {
#if SG2_CUDA_KERNELS
  if (x.is_cuda()) return gpu::bias_act_forward(x, b, dim, a, kernel);
#endif
  return host::bias_act_forward(x, b, dim, a);
}

// dx = dy * slope(y); y undefined when the slope is constant.
at::Tensor masked_gradient(const at::Tensor& dy, const at::Tensor& y, const ActivationParams& a,
                           [[maybe_unused]] Kernel kernel) {
  if (!y.defined()) return dy * a.gain;
#if SG2_CUDA_KERNELS
  if (y.is_cuda()) return gpu::bias_act_grad(dy, y, a, kernel);
#endif
  return host::bias_act_grad(dy, y, a);
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The functions take the activation and the kernel choice as scalars: apply() counts every element
// of a vector argument as an input that backward must answer.
//
// dx = dy * slope(y): linear in dy, and slope is piecewise constant, so its gradient w.r.t. y is 0.
// y is only used (has_y) when the slope varies.
struct BiasActGradFunction : public torch::autograd::Function<BiasActGradFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dy, const at::Tensor& y, bool has_y, int64_t act,
                            double alpha, double gain, double clamp, int64_t kernel) {
    const ActivationParams a{static_cast<int>(act), static_cast<float>(alpha), static_cast<float>(gain),
                             static_cast<float>(clamp)};
    ctx->save_for_backward({has_y ? y : at::Tensor()});
    ctx->saved_data["activation"] = to_saved(a);
    ctx->saved_data["kernel"] = kernel;
    return masked_gradient(dy, has_y ? y : at::Tensor(), a, static_cast<Kernel>(kernel));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    const at::Tensor dx = apply_grad(grads[0], y, from_saved(ctx->saved_data["activation"]),
                                     static_cast<Kernel>(ctx->saved_data["kernel"].toInt()));
    return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
  // The identity where the slope is the constant 1 (linear, no clamp, gain 1: the input
  // modulation's op): dy itself, no pass over it here nor in its own gradient.
  static at::Tensor apply_grad(const at::Tensor& dy, const at::Tensor& y, const ActivationParams& a, Kernel kernel) {
    if (!y.defined() && a.gain == 1.0f) return dy;
    return BiasActGradFunction::apply(dy, or_placeholder(y, dy), y.defined(), a.act, a.alpha, a.gain, a.clamp,
                                      static_cast<int64_t>(kernel));
  }
};

// y = clamp(act(x + b) * gain); the gradient of b sums dx over every dimension but dim.
struct BiasActFunction : public torch::autograd::Function<BiasActFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& b, bool has_bias, int64_t dim,
                            int64_t act, double alpha, double gain, double clamp, int64_t kernel) {
    const ActivationParams a{static_cast<int>(act), static_cast<float>(alpha), static_cast<float>(gain),
                             static_cast<float>(clamp)};
    at::Tensor y = bias_act_on_device(x, has_bias ? b : at::Tensor(), dim, a, static_cast<Kernel>(kernel));
    // Through save_for_backward: an output kept in saved_data would keep its own graph alive.
    ctx->save_for_backward({needs_output(a) ? y : at::Tensor()});
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["activation"] = to_saved(a);
    ctx->saved_data["kernel"] = kernel;
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    const int64_t dim = ctx->saved_data["dim"].toInt();
    const ActivationParams a = from_saved(ctx->saved_data["activation"]);
    const auto kernel = static_cast<Kernel>(ctx->saved_data["kernel"].toInt());
    // b's gradient only where b takes one: D's biases in G's phases do not (a pass over dx each, as
    // large as the layer's output, otherwise spent on a gradient autograd drops).
    const bool bias_gradient = ctx->saved_data["has_bias"].toBool() && ctx->needs_input_grad(1);
    if (bias_gradient && kernel == Kernel::Auto && !at::GradMode::is_enabled()) {
      if (const auto fused = bias_act_gradient_with_bias_sums(grads[0], y, dim, a)) {
        return gradients(fused->first, fused->second);
      }
    }
    const at::Tensor dx = BiasActGradFunction::apply_grad(grads[0], y, a, kernel);
    return gradients(dx, bias_gradient ? sum_but(dx, dim) : at::Tensor());
  }
  // dx and db, then none for the flags, the activation and the kernel.
  static variable_list gradients(const at::Tensor& dx, const at::Tensor& db) {
    return {dx, db, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
  // x summed over every dimension but dim.
  static at::Tensor sum_but(const at::Tensor& x, int64_t dim) {
    std::vector<int64_t> reduce;
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (d != dim) reduce.push_back(d);
    }
    return reduce.empty() ? x : x.sum(reduce);
  }
};

}  // namespace

at::Tensor differentiable_bias_act_gradient(const at::Tensor& dy, const at::Tensor& y, const ActivationParams& a) {
  return BiasActGradFunction::apply_grad(dy, needs_output(a) ? y : at::Tensor(), a, Kernel::Auto);
}

bool bias_act_runs_packed([[maybe_unused]] const at::Tensor& x) {
#if SG2_CUDA_KERNELS
  if (x.is_cuda() && supported(x)) return gpu::runs_packed(x);
#endif
  return false;
}

at::Tensor bias_act_forward(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p, Kernel kernel) {
  SG2_CHECK(supported(x), "bias_act kernel: unsupported tensor {} on {}", c10::toString(x.scalar_type()),
            x.device().str());
  return bias_act_on_device(x, b, p.dim, resolve(p), kernel);
}

at::Tensor bias_act_gradient(const at::Tensor& dy, const at::Tensor& y, const ops::BiasActParams& p, Kernel kernel) {
  SG2_CHECK(supported(y), "bias_act kernel: unsupported tensor {} on {}", c10::toString(y.scalar_type()),
            y.device().str());
  const ActivationParams a = resolve(p);
  return masked_gradient(dy, needs_output(a) ? y : at::Tensor(), a, kernel);
}

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p, Kernel kernel) {
  RECORD_FUNCTION("sg2::bias_act", std::vector<c10::IValue>());
  SG2_CHECK(supported(x), "bias_act kernel: unsupported tensor {} on {}", c10::toString(x.scalar_type()),
            x.device().str());
  const ActivationParams a = resolve(p);
  return BiasActFunction::apply(x, or_placeholder(b, x), b.defined(), p.dim, a.act, a.alpha, a.gain, a.clamp,
                                static_cast<int64_t>(kernel));
}

}  // namespace kernels

}  // namespace sg2::ops
