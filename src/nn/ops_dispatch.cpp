// Entry points that choose between the reference ops and the hand-written kernels.
#include "sg2/nn/kernels.h"
#include "sg2/nn/kink_pinning.h"
#include "sg2/nn/ops.h"

namespace sg2::nn::ops {

at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const FirParams& p) {
  if (!reference_ops() && kernels::supported(x)) return kernels::upfirdn2d(x, f, p);
  return upfirdn2d_reference(x, f, p);
}

namespace {

// With kink pinning on, the bias is added here (one float32 addition either way) so that the
// pre-activations can be recorded or pinned before the activation.
at::Tensor bias_act_pinned(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p) {
  at::Tensor v = x;
  if (b.defined()) {
    std::vector<int64_t> shape(x.dim(), 1);
    shape[p.dim] = -1;
    v = x + b.reshape(shape);
  }
  v = pin_kinks(v);
  if (!reference_ops() && kernels::supported(v)) return kernels::bias_act(v, at::Tensor(), p);
  return bias_act_reference(v, at::Tensor(), p);
}

}  // namespace

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p) {
  if (p.act != Activation::Linear && kink_pinning() != KinkPinning::Off) return bias_act_pinned(x, b, p);
  if (!reference_ops() && kernels::supported(x)) return kernels::bias_act(x, b, p);
  return bias_act_reference(x, b, p);
}

}  // namespace sg2::nn::ops
