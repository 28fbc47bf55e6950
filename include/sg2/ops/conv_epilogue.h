#pragma once
// The end of a synthesis layer after its shared-weight convolution (the reference's modulated_conv2d
// with fused_modconv off, then SynthesisLayer's bias_act): demodulation, noise, bias, activation,
// gain and clamp as one op. Composed from LibTorch's addcmul and bias_act it costs two passes over
// the activations forward and, in backward, bias_act's gradient, the demodulation's product and the
// reductions of the coefficients', noise's and bias's gradients over full-size temporaries; its
// kernels make one pass each way, the gradient's sums taken in the same pass. The op, its
// composition and the autograd function are in src/ops/conv_epilogue.cpp; the raw kernels in
// conv_epilogue_cpu.cpp and cuda/.

#include "sg2/ops/bias_act.h"
#include "sg2/ops/compute_settings.h"

#include <ATen/ATen.h>

namespace sg2::ops {

// y = clamp(act(x * demod[n, c] + noise[n, 0] * noise_strength + b[c]) * gain), in x's layout.
// x: [N, C, H, W] (the kernels take it contiguous or channels_last); demod: [N, C]; noise: [N or 1,
// 1, H, W] or undefined (none); noise_strength: a scalar tensor (undefined with the noise); b: [C]
// or undefined; p.dim is 1. Auto runs the kernels where conv_epilogue_runs_fused holds and the
// composition otherwise; Reference, or a pre-activation hook, the composition of reference ops (bit
// for bit the reference's modulated_conv2d + bias_act); a named CUDA kernel the composition with
// bias_act in that kernel.
at::Tensor demodulate_noise_bias_act(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                                     const at::Tensor& noise_strength, const at::Tensor& b, const BiasActParams& p,
                                     const ComputeSettings& compute = {});

// The reference's composition: bias_act(addcmul(noise * noise_strength, x, demod), b) in x's type
// (bias_act's implementation chosen by compute).
at::Tensor demodulate_noise_bias_act_composed(const at::Tensor& x, const at::Tensor& demod, const at::Tensor& noise,
                                              const at::Tensor& noise_strength, const at::Tensor& b,
                                              const BiasActParams& p, const ComputeSettings& compute = {});

// y = x * scale[n, c], the modulation of a layer's input by its styles: the epilogue's kernels with
// no noise, no bias and a linear activation, whose gradient pass also takes scale's gradient (the
// plane sums of dy * x) instead of a full-size product and its reduction. x: [N, C, H, W]; scale:
// [N, C]. The composition (Reference, or where the kernels do not run) is x * scale in x's type.
at::Tensor scale_planes(const at::Tensor& x, const at::Tensor& scale, const ComputeSettings& compute = {});

}  // namespace sg2::ops

namespace sg2::ops::kernels {

// The kernels' arguments: x in its storage type (contiguous, or channels_last: NHWC memory), the
// rest float32, contiguous and 16-byte aligned on x's device: demod [N, C]; noise [N or 1, 1, H, W]
// and its strength (one value), both undefined without noise; bias [C] or undefined.
struct EpilogueTensors {
  at::Tensor x, demod, noise, noise_strength, bias;
};

// dx, and per plane the sums of g * x, g and g * noise, g the pre-activation's gradient:
// plane_sums [N, C, 3] float32.
struct EpilogueGradient {
  at::Tensor dx, plane_sums;
};

// Whether demodulate_noise_bias_act runs its kernels on x and noise (kernel Auto; x contiguous or channels_last,
// of a type the kernels take; on CUDA, NCHW planes or NHWC pixels of whole 16-byte packs).
bool conv_epilogue_runs_fused(const at::Tensor& x, const at::Tensor& noise, Kernel kernel);

// The raw kernels, no autograd (for the op benchmark and the tests): y in x's layout, and the
// gradient through y (dx in x's layout). t must keep EpilogueTensors' contract (checked: an Error
// names the tensor that does not).
at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const ops::BiasActParams& p);
EpilogueGradient conv_epilogue_gradient(const at::Tensor& dy, const at::Tensor& y, const EpilogueTensors& t,
                                        const ops::BiasActParams& p);

}  // namespace sg2::ops::kernels
