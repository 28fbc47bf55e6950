// CPU kernel for bias_act (cpu_kernels.h): y = clamp(act(x + b) * gain) in one pass over x's memory
// as [outer, C, inner] (channel_layout.h: contiguous or channels_last, kept in y), and its gradient
// dy * slope(y), with the per-element arithmetic the CUDA kernels use (bias_act_elements.h).
#include "channel_layout.h"
#include "cpu_kernels.h"

#include <ATen/Parallel.h>

namespace sg2::nn::kernels::host {

at::Tensor bias_act_forward(const at::Tensor& x_in, const at::Tensor& b_in, int64_t dim, const ActivationParams& a) {
  const at::Tensor x = dense(x_in);
  const ChannelLayout l = channel_layout(x, dim);
  check_bias(b_in, x, dim, l);
  if (x.numel() == 0) return at::empty_like(x);
  const at::Tensor b = b_in.defined() ? b_in.contiguous() : at::zeros({l.channels}, x.options());
  at::Tensor y = at::empty_like(x);  // x's layout
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
  const at::Tensor y = dense(y_in), dy = laid_out_like(dy_in, y);
  at::Tensor dx = at::empty_like(y);
  const float* pdy = dy.data_ptr<float>();
  const float* py = y.data_ptr<float>();
  float* pdx = dx.data_ptr<float>();
  at::parallel_for(0, dy.numel(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) pdx[i] = pdy[i] * activation_slope(py[i], a);
  });
  return dx;
}

}  // namespace sg2::nn::kernels::host
