#pragma once
// bias_act: bias, activation, gain and clamp in one op (reference: torch_utils/ops/bias_act.py).
// The op, its reference, its autograd functions and the choice between them are in
// src/ops/bias_act.cpp; the raw kernels in bias_act_cpu.cpp (CPU) and cuda/ (CUDA).

#include "sg2/ops/activation.h"
#include "sg2/ops/kernels.h"
#include "sg2/ops/compute_settings.h"

#include <ATen/ATen.h>

namespace sg2::ops {

struct BiasActParams {
  int64_t dim = 1;
  Activation act = Activation::Linear;
  double alpha = -1;  // < 0: the activation's default
  double gain = -1;   // < 0: the activation's default
  double clamp = -1;  // < 0: no clamping
};

// x + b with b [x.size(dim)] broadcast along every other dimension; b undefined: x.
at::Tensor add_bias(const at::Tensor& x, const at::Tensor& b, int64_t dim);

// y = clamp(act(x + b) * gain); b: [x.size(dim)] or undefined.
at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p, const ComputeSettings& compute = {});
at::Tensor bias_act_reference(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p);

}  // namespace sg2::ops

namespace sg2::ops::kernels {

// The kernel (kernels::supported(x) must hold), differentiable to any order: backward needs only the
// output y, and the gradient's own gradient is the same masked product.
at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p, Kernel kernel = Kernel::Auto);

// Whether the raw kernels run x in 16-byte packs (CUDA, memory of whole aligned packs; the other
// tensors of the call laid out like x and as aligned).
bool bias_act_runs_packed(const at::Tensor& x);

// The raw kernels, no autograd (kernel: kernel.h; PerElement one element a thread, any other packed
// where bias_act_runs_packed): y = clamp(act(x + b) * gain), and the
// gradient through y, dx = dy * slope(y) (y as bias_act_forward returned it).
at::Tensor bias_act_forward(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p,
                            Kernel kernel = Kernel::Auto);
at::Tensor bias_act_gradient(const at::Tensor& dy, const at::Tensor& y, const ops::BiasActParams& p,
                             Kernel kernel = Kernel::Auto);

}  // namespace sg2::ops::kernels
