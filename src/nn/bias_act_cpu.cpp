// CPU kernel for bias_act (see kernels.h): y = clamp(act(x + b) * gain) in one pass over
// [outer, C, inner]; the gradient needs only y, and its own gradient is the same masked product.
// The autograd functions here serve the CUDA kernels too (cuda/kernels_cuda.h).
#include "sg2/core/error.h"
#include "sg2/nn/kernels.h"
#if SG2_CUDA_KERNELS
#include "cuda/kernels_cuda.h"
#endif

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>

namespace sg2::nn::kernels {

bool cuda_kernels_built() { return SG2_CUDA_KERNELS != 0; }

bool supported(const at::Tensor& x) {
#if SG2_CUDA_KERNELS
  if (gpu::supported(x)) return true;
#endif
  return x.device().is_cpu() && x.scalar_type() == at::kFloat;
}

namespace {

struct Resolved {
  ops::Activation act;
  float alpha, gain, clamp;  // clamp < 0: none
};

Resolved resolve(const ops::BiasActParams& p) {
  return {p.act, static_cast<float>(p.alpha >= 0 ? p.alpha : ops::default_alpha(p.act)),
          static_cast<float>(p.gain >= 0 ? p.gain : ops::default_gain(p.act)), static_cast<float>(p.clamp)};
}

#if SG2_CUDA_KERNELS
cuda::ActivationParams for_cuda(const Resolved& r) { return {static_cast<int>(r.act), r.alpha, r.gain, r.clamp}; }
#endif

// x viewed as [outer, channels, inner] around dimension `dim`.
struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
};

Layout layout_of(const at::Tensor& x, int64_t dim) {
  Layout l;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < dim) l.outer *= x.size(d);
    if (d == dim) l.channels = x.size(d);
    if (d > dim) l.inner *= x.size(d);
  }
  return l;
}

inline float activate(float v, const Resolved& r) {
  if (r.act == ops::Activation::Relu) v = v > 0 ? v : 0.0f;
  if (r.act == ops::Activation::LRelu) v = v > 0 ? v : v * r.alpha;
  v *= r.gain;
  if (r.clamp >= 0) v = v < -r.clamp ? -r.clamp : (v > r.clamp ? r.clamp : v);
  return v;
}

// d y / d (x + b) expressed through y alone (gain > 0, alpha >= 0).
inline float slope(float y, const Resolved& r) {
  float s = r.gain;
  if (r.act == ops::Activation::Relu) s = y > 0 ? r.gain : 0.0f;
  if (r.act == ops::Activation::LRelu) s = y > 0 ? r.gain : r.gain * r.alpha;
  if (r.clamp >= 0 && !(y > -r.clamp && y < r.clamp)) s = 0.0f;
  return s;
}

// dx = dy * slope(y); y undefined when the slope is constant (linear, no clamp).
at::Tensor masked_gradient(const at::Tensor& dy_in, const at::Tensor& y_in, const Resolved& r) {
  if (!y_in.defined()) return dy_in * r.gain;
#if SG2_CUDA_KERNELS
  if (y_in.is_cuda()) return gpu::bias_act_grad(dy_in, y_in, for_cuda(r));
#endif
  const at::Tensor dy = dy_in.contiguous(), y = y_in.contiguous();
  at::Tensor dx = at::empty_like(dy);
  const float* pdy = dy.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  float* pdx = dx.data_ptr<float>();
  at::parallel_for(0, dy.numel(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) pdx[i] = pdy[i] * slope(py[i], r);
  });
  return dx;
}

bool needs_output(const Resolved& r) { return r.act != ops::Activation::Linear || r.clamp >= 0; }

ops::BiasActParams to_params(int64_t dim, int64_t act, double alpha, double gain, double clamp) {
  ops::BiasActParams p;
  p.dim = dim;
  p.act = static_cast<ops::Activation>(act);
  p.alpha = alpha;
  p.gain = gain;
  p.clamp = clamp;
  return p;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// LibTorch 1.13's custom functions take no undefined tensors: an empty placeholder stands in.
at::Tensor or_placeholder(const at::Tensor& t, const at::Tensor& like) {
  return t.defined() ? t : at::empty({0}, like.options());
}

// dx = dy * slope(y): linear in dy, and slope is piecewise constant, so its gradient w.r.t. y is 0.
// y is only used (has_y) when the slope varies.
struct BiasActGradFunction : public torch::autograd::Function<BiasActGradFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& dy, const at::Tensor& y, bool has_y, int64_t act,
                            double alpha, double gain, double clamp) {
    ctx->save_for_backward({has_y ? y : at::Tensor()});
    ctx->saved_data["p"] = std::vector<double>{static_cast<double>(act), alpha, gain, clamp};
    return masked_gradient(dy, has_y ? y : at::Tensor(), resolve(to_params(1, act, alpha, gain, clamp)));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    const auto p = ctx->saved_data["p"].toDoubleVector();
    return {apply_grad(grads[0], y, static_cast<int64_t>(p[0]), p[1], p[2], p[3]), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
  static at::Tensor apply_grad(const at::Tensor& dy, const at::Tensor& y, int64_t act, double alpha, double gain,
                               double clamp) {
    return BiasActGradFunction::apply(dy, or_placeholder(y, dy), y.defined(), act, alpha, gain, clamp);
  }
};

struct BiasActFunction : public torch::autograd::Function<BiasActFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& b, bool has_bias, int64_t dim,
                            int64_t act, double alpha, double gain, double clamp) {
    const ops::BiasActParams p = to_params(dim, act, alpha, gain, clamp);
    at::Tensor y = bias_act_forward(x, has_bias ? b : at::Tensor(), p);
    const Resolved r = resolve(p);
    // Through save_for_backward: an output kept in saved_data would keep its own graph alive.
    ctx->save_for_backward({needs_output(r) ? y : at::Tensor()});
    ctx->saved_data["has_bias"] = has_bias;
    ctx->saved_data["p"] = std::vector<double>{static_cast<double>(dim), static_cast<double>(act), r.alpha, r.gain,
                                               static_cast<double>(r.clamp)};
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor y = ctx->get_saved_variables()[0];
    const auto p = ctx->saved_data["p"].toDoubleVector();
    const auto dim = static_cast<int64_t>(p[0]);
    at::Tensor dx = BiasActGradFunction::apply_grad(grads[0], y, static_cast<int64_t>(p[1]), p[2], p[3], p[4]);
    at::Tensor db;
    if (ctx->saved_data["has_bias"].toBool()) {
      std::vector<int64_t> reduce;
      for (int64_t d = 0; d < dx.dim(); ++d) {
        if (d != dim) reduce.push_back(d);
      }
      db = reduce.empty() ? dx : dx.sum(reduce);
    }
    return {dx, db, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor bias_act_forward(const at::Tensor& x_in, const at::Tensor& b_in, const ops::BiasActParams& p) {
  SG2_CHECK(supported(x_in), "bias_act kernel: unsupported tensor {} on {}", c10::toString(x_in.scalar_type()),
            x_in.device().str());
#if SG2_CUDA_KERNELS
  if (x_in.is_cuda()) return gpu::bias_act_forward(x_in, b_in, p.dim, for_cuda(resolve(p)));
#endif
  const at::Tensor x = x_in.contiguous();
  const Layout l = layout_of(x, p.dim);
  SG2_CHECK(!b_in.defined() || (b_in.dim() == 1 && b_in.size(0) == l.channels),
            "bias_act: bias of shape {} does not match x {} at dim {}", b_in.sizes(), x.sizes(), p.dim);
  const at::Tensor b = b_in.defined() ? b_in.contiguous() : at::zeros({l.channels}, x.options());
  const Resolved r = resolve(p);
  at::Tensor y = at::empty_like(x);
  const float* px = x.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* py = y.data_ptr<float>();
  at::parallel_for(0, l.outer * l.channels, std::max<int64_t>(1, 16384 / l.inner), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float bias = pb[row % l.channels];
      const float* xr = px + row * l.inner;
      float* yr = py + row * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) yr[i] = activate(xr[i] + bias, r);
    }
  });
  return y;
}

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p) {
  RECORD_FUNCTION("sg2::bias_act", std::vector<c10::IValue>());
  return BiasActFunction::apply(x, or_placeholder(b, x), b.defined(), p.dim, static_cast<int64_t>(p.act), p.alpha,
                                p.gain, p.clamp);
}

}  // namespace sg2::nn::kernels
