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

at::Tensor dispatch_bias_act(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p) {
  if (!reference_ops() && kernels::supported(x)) return kernels::bias_act(x, b, p);
  return bias_act_reference(x, b, p);
}

}  // namespace

at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const BiasActParams& p) {
  // With kink pinning on (parity checks), the bias is added first (the same single float32
  // addition) so that the pre-activations can be recorded or pinned before the activation.
  if (p.act != Activation::Linear && kink_pinning() != KinkPinning::Off) {
    return dispatch_bias_act(pin_kinks(add_bias(x, b, p.dim)), at::Tensor(), p);
  }
  return dispatch_bias_act(x, b, p);
}

}  // namespace sg2::nn::ops
