// CPU kernel for bias_act (cpu_kernels.h): y = clamp(act(x + b) * gain) in one pass over
// [outer, C, inner], and its gradient dy * slope(y), with the per-element arithmetic the CUDA
// kernels use (bias_act_elements.h).
#include "cpu_kernels.h"

#include "sg2/core/error.h"

#include <ATen/Parallel.h>

namespace sg2::nn::kernels::host {

namespace {

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

}  // namespace

at::Tensor bias_act_forward(const at::Tensor& x_in, const at::Tensor& b_in, int64_t dim, const ActivationParams& a) {
  const at::Tensor x = x_in.contiguous();
  const Layout l = layout_of(x, dim);
  SG2_CHECK(!b_in.defined() || (b_in.dim() == 1 && b_in.size(0) == l.channels),
            "bias_act: bias of shape {} does not match x {} at dim {}", b_in.sizes(), x.sizes(), dim);
  const at::Tensor b = b_in.defined() ? b_in.contiguous() : at::zeros({l.channels}, x.options());
  at::Tensor y = at::empty_like(x);
  const float* px = x.data_ptr<float>();
  const float* pb = b.data_ptr<float>();
  float* py = y.data_ptr<float>();
  at::parallel_for(0, l.outer * l.channels, std::max<int64_t>(1, 16384 / l.inner), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float bias = pb[row % l.channels];
      const float* xr = px + row * l.inner;
      float* yr = py + row * l.inner;
      for (int64_t i = 0; i < l.inner; ++i) yr[i] = activate(xr[i] + bias, a);
    }
  });
  return y;
}

at::Tensor bias_act_grad(const at::Tensor& dy_in, const at::Tensor& y_in, const ActivationParams& a) {
  const at::Tensor dy = dy_in.contiguous(), y = y_in.contiguous();
  at::Tensor dx = at::empty_like(dy);
  const float* pdy = dy.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  float* pdx = dx.data_ptr<float>();
  at::parallel_for(0, dy.numel(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) pdx[i] = pdy[i] * activation_slope(py[i], a);
  });
  return dx;
}

}  // namespace sg2::nn::kernels::host
