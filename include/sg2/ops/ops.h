#pragma once
// The StyleGAN2 ops: FIR resampling (upfirdn2d.h), fused bias + activation (bias_act.h), the
// synthesis layers' demodulation + noise + bias + activation (conv_epilogue.h),
// convolution with resampling, modulated convolution, and the mapping/discriminator statistics.
// Every op with a faster implementation also has a plain reference built from standard LibTorch ops
// (`*_reference`, the definition the tests check against); its last argument, the run's
// ComputeSettings (compute_settings.h), chooses between them.

#include "sg2/ops/bias_act.h"
#include "sg2/ops/conv_epilogue.h"
#include "sg2/ops/compute_settings.h"
#include "sg2/ops/upfirdn2d.h"

#include <ATen/ATen.h>

#include <array>

namespace sg2::ops {

struct ConvResampleParams {
  int64_t up = 1;
  int64_t down = 1;
  Padding padding{0, 0, 0, 0};  // with respect to the upsampled image
  int64_t groups = 1;
  bool flip_weight = true;      // true = correlation (as conv2d), false = convolution
  bool flip_filter = false;
};

// Transposed convolution (the adjoint of a strided convolution). w: [I, O/groups, kh, kw] as
// at::conv_transpose2d takes it -> [N, O, (H-1)*stride - 2*padding + kh, ...]. On the CPU, stride 2
// without padding or groups runs as four ordinary convolutions, one per output phase (polyphase),
// which avoid LibTorch's slow transposed-convolution path; the reference is at::conv_transpose2d.
at::Tensor transposed_conv2d(const at::Tensor& x, const at::Tensor& w, int64_t stride, std::array<int64_t, 2> padding,
                             int64_t groups, const ComputeSettings& compute = {});
at::Tensor transposed_conv2d_reference(const at::Tensor& x, const at::Tensor& w, int64_t stride,
                                       std::array<int64_t, 2> padding, int64_t groups);

// A convolution's weight w in x's type and layout: channels_last when x is, as cuDNN would convert
// it for every pass; in the same copy as the type's where the type changes.
at::Tensor weight_for(const at::Tensor& w, const at::Tensor& x);

// 2-D convolution with optional up/downsampling through the FIR filter f (undefined = none).
// x: [N, I*groups, H, W], w: [O, I, kh, kw] -> [N, O, H', W']
at::Tensor conv2d_resample(const at::Tensor& x, const at::Tensor& w, const at::Tensor& f, ConvResampleParams p,
                           const ComputeSettings& compute = {});

struct ModConvParams {
  int64_t up = 1;
  int64_t down = 1;
  int64_t padding = 0;
  bool demodulate = true;
  bool flip_weight = true;
  bool fused = true;  // one grouped convolution (true) or scale activations around a plain one
};

// Demodulation coefficients rsqrt(sum_{i,k} (weight[o,i,k] * styles[n,i])^2 + 1e-8) -> [N, O].
// The reference forms the per-sample weights [N, O, I, k, k]; the fast form is the same sum as a
// matmul, (styles^2) @ (sum_k weight^2)^T, without that tensor (or its gradient) in memory.
at::Tensor demodulation_coefficients(const at::Tensor& weight, const at::Tensor& styles, const ComputeSettings& compute = {});
at::Tensor demodulation_coefficients_reference(const at::Tensor& weight, const at::Tensor& styles);

// Modulated convolution: per-sample weights w * styles, demodulated to unit norm per output channel.
// x: [N, I, H, W], weight: [O, I, k, k], styles: [N, I], noise: broadcastable to the output or undefined.
at::Tensor modulated_conv2d(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& styles,
                            const at::Tensor& noise, const at::Tensor& resample_filter, const ModConvParams& p,
                            const ComputeSettings& compute = {});

// The unfused modulated convolution up to its demodulation: y = (x * styles) convolved with the
// shared weight, and the coefficients demod [N, O] (undefined without demodulate) that the caller
// applies with the noise, e.g. in demodulate_noise_bias_act (conv_epilogue.h). p.fused is ignored.
struct ModulatedConvParts {
  at::Tensor y, demod;
};
ModulatedConvParts modulated_conv2d_parts(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& styles,
                                          const at::Tensor& resample_filter, const ModConvParams& p,
                                          const ComputeSettings& compute = {});

// x * rsqrt(mean(x^2, dim) + 1e-8)
at::Tensor normalize_2nd_moment(const at::Tensor& x, int64_t dim = 1);

// Minibatch standard deviation: appends `num_channels` feature maps holding the stddev over groups
// of `group_size` samples (group_size <= 0 or > N: the whole batch). x: [N, C, H, W] -> [N, C+F, H, W]
at::Tensor minibatch_stddev(const at::Tensor& x, int64_t group_size, int64_t num_channels);

}  // namespace sg2::ops
