// Convolution with resampling and modulated convolution, composed from upfirdn2d and LibTorch's
// convolutions in the same order of operations as the reference (which keeps outputs equal to
// float32 rounding).
#include "sg2/core/error.h"
#include "sg2/ops/conv_gradfix.h"
#include "sg2/ops/ops.h"
#include "sg2/ops/tf32_split.h"

#include <cmath>
#include <utility>

namespace sg2::ops {

namespace {

// conv2d or conv_transpose2d; flip_weight=false turns correlation into convolution. In training on
// CUDA through conv2d_gradfix, whose second-order gradients run ordinary convolution kernels. Either
// runs in three TF32 passes where run.float32_convolutions asks and no gradient is recorded through
// the split (conv2d_gradfix's functions, or no gradient wanted: tf32_split.h).
at::Tensor plain_conv(const at::Tensor& x, at::Tensor w, int64_t stride, std::array<int64_t, 2> padding,
                      int64_t groups, bool transpose, bool flip_weight, const ComputeSettings& compute) {
  if (!flip_weight) w = w.flip({2, 3});
  if (uses_conv2d_gradfix(x, w, compute)) {
    ConvGeometry geometry;
    geometry.stride = {stride, stride};
    geometry.padding = padding;
    geometry.groups = groups;
    geometry.transpose = transpose;
    geometry.layout = layout_of(x);
    geometry.tf32_split = compute.tf32_split;
    return conv2d_gradfix(x, w, geometry);
  }
  return bilinear_in_tf32_passes(x, w, compute.tf32_split, [&](const at::Tensor& xs, const at::Tensor& ws) {
    if (transpose) return transposed_conv2d(xs, ws, stride, padding, groups, compute);
    const std::array<int64_t, 2> strides{stride, stride}, ones{1, 1};
    return at::conv2d(xs, ws, at::Tensor(), strides, padding, ones, groups);
  });
}

FirParams fir(const Padding& padding, int64_t up, int64_t down, double gain, bool flip_filter) {
  FirParams p;
  p.up = up;
  p.down = down;
  p.padding = padding;
  p.gain = gain;
  p.flip_filter = flip_filter;
  return p;
}

// Transposed strided convolution for up > 1, then the FIR filter (and optional downsampling).
at::Tensor conv_upsampled(const at::Tensor& x, at::Tensor w, const at::Tensor& f, const ConvResampleParams& p,
                          Padding pad, const ComputeSettings& compute) {
  const int64_t out_channels = w.size(0), in_per_group = w.size(1), kh = w.size(2), kw = w.size(3);
  const int64_t g = p.groups, up = p.up;
  if (g == 1) {
    w = w.transpose(0, 1);  // [I, O, kh, kw]
  } else {
    w = w.reshape({g, out_channels / g, in_per_group, kh, kw}).transpose(1, 2);
    w = w.reshape({g * in_per_group, out_channels / g, kh, kw});
  }
  auto& [px0, px1, py0, py1] = pad;
  px0 -= kw - 1;
  px1 -= kw - up;
  py0 -= kh - 1;
  py1 -= kh - up;
  const int64_t pxt = std::max<int64_t>(std::min(-px0, -px1), 0);
  const int64_t pyt = std::max<int64_t>(std::min(-py0, -py1), 0);
  at::Tensor y = plain_conv(x, w, up, {pyt, pxt}, g, /*transpose=*/true, !p.flip_weight, compute);
  const Padding rest{px0 + pxt, px1 + pxt, py0 + pyt, py1 + pyt};
  y = upfirdn2d(y, f, fir(rest, 1, 1, static_cast<double>(up * up), p.flip_filter), compute);
  if (p.down > 1) y = upfirdn2d(y, f, fir({0, 0, 0, 0}, 1, p.down, 1.0, p.flip_filter), compute);
  return y;
}

}  // namespace

at::Tensor weight_for(const at::Tensor& w, const at::Tensor& x) {
  return w.to(x.scalar_type(), /*non_blocking=*/false, /*copy=*/false, layout_of(x));
}

at::Tensor conv2d_resample(const at::Tensor& x, const at::Tensor& w, const at::Tensor& f, ConvResampleParams p,
                           const ComputeSettings& compute) {
  SG2_CHECK(x.dim() == 4 && w.dim() == 4, "conv2d_resample expects 4-D x and w, got {} and {}", x.sizes(), w.sizes());
  SG2_CHECK(p.up >= 1 && p.down >= 1 && p.groups >= 1, "conv2d_resample: invalid up {} / down {} / groups {}", p.up,
            p.down, p.groups);
  SG2_CHECK((p.up == 1 && p.down == 1) || f.defined(), "conv2d_resample: resampling needs a filter");
  const int64_t kh = w.size(2), kw = w.size(3);
  const int64_t fh = f.defined() ? f.size(0) : 1, fw = f.defined() ? f.size(1) : 1;
  Padding pad = p.padding;  // {x0, x1, y0, y1}

  // Account for the filter's extent around up/downsampling.
  if (p.up > 1) {
    pad[0] += (fw + p.up - 1) / 2;
    pad[1] += (fw - p.up) / 2;
    pad[2] += (fh + p.up - 1) / 2;
    pad[3] += (fh - p.up) / 2;
  }
  if (p.down > 1) {
    pad[0] += (fw - p.down + 1) / 2;
    pad[1] += (fw - p.down) / 2;
    pad[2] += (fh - p.down + 1) / 2;
    pad[3] += (fh - p.down) / 2;
  }
  const bool pointwise = (kw == 1 && kh == 1);

  if (pointwise && p.down > 1 && p.up == 1) {  // downsample first, then the 1x1 convolution
    at::Tensor y = upfirdn2d(x, f, fir(pad, 1, p.down, 1.0, p.flip_filter), compute);
    return plain_conv(y, w, 1, {0, 0}, p.groups, false, p.flip_weight, compute);
  }
  if (pointwise && p.up > 1 && p.down == 1) {  // 1x1 convolution first, then upsample
    at::Tensor y = plain_conv(x, w, 1, {0, 0}, p.groups, false, p.flip_weight, compute);
    return upfirdn2d(y, f, fir(pad, p.up, 1, static_cast<double>(p.up * p.up), p.flip_filter), compute);
  }
  if (p.down > 1 && p.up == 1) {  // filter, then strided convolution
    at::Tensor y = upfirdn2d(x, f, fir(pad, 1, 1, 1.0, p.flip_filter), compute);
    return plain_conv(y, w, p.down, {0, 0}, p.groups, false, p.flip_weight, compute);
  }
  if (p.up > 1) return conv_upsampled(x, w, f, p, pad, compute);
  if (pad[0] == pad[1] && pad[2] == pad[3] && pad[0] >= 0 && pad[2] >= 0) {  // plain convolution
    return plain_conv(x, w, 1, {pad[2], pad[0]}, p.groups, false, p.flip_weight, compute);
  }
  // General case: pad through upfirdn2d, then convolve.
  const at::Tensor identity = at::ones({1, 1}, x.options().dtype(at::kFloat));
  at::Tensor y = upfirdn2d(x, identity, fir(pad, 1, 1, 1.0, p.flip_filter), compute);
  return plain_conv(y, w, 1, {0, 0}, p.groups, false, p.flip_weight, compute);
}

at::Tensor demodulation_coefficients_reference(const at::Tensor& weight, const at::Tensor& styles) {
  at::Tensor w = weight.unsqueeze(0) * styles.reshape({styles.size(0), 1, -1, 1, 1});  // [N, O, I, k, k]
  return (w.square().sum({2, 3, 4}) + 1e-8).rsqrt();                                 // [N, O]
}

at::Tensor demodulation_coefficients(const at::Tensor& weight, const at::Tensor& styles, const ComputeSettings& compute) {
  if (compute.reference()) return demodulation_coefficients_reference(weight, styles);
  at::Tensor weight_energy = weight.square().sum({2, 3});              // [O, I]
  return (styles.square().matmul(weight_energy.t()) + 1e-8).rsqrt();  // [N, O]
}

namespace {

// The weight and styles as both forms of the modulated convolution use them: in reduced precision
// pre-normalized so that the per-sample weights cannot overflow (the reference does it for float16;
// bfloat16 is treated alike, float64 is not).
std::pair<at::Tensor, at::Tensor> normalized_for(const at::Tensor& x, const at::Tensor& weight,
                                                 const at::Tensor& styles, const ModConvParams& p) {
  const int64_t batch = x.size(0), in_channels = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  SG2_CHECK(x.size(1) == in_channels, "modulated_conv2d: x has {} channels, weight expects {}", x.size(1),
            in_channels);
  SG2_CHECK(styles.sizes() == at::IntArrayRef({batch, in_channels}), "modulated_conv2d: styles {} != [{}, {}]",
            styles.sizes(), batch, in_channels);
  const at::ScalarType type = x.scalar_type();
  if ((type != at::kHalf && type != at::kBFloat16) || !p.demodulate) return {weight, styles};
  return {weight * (1.0 / std::sqrt(static_cast<double>(in_channels * kh * kw)) /
                    weight.norm(INFINITY, {1, 2, 3}, /*keepdim=*/true)),
          styles / styles.norm(INFINITY, {1}, /*keepdim=*/true)};
}

ConvResampleParams resample_params(const ModConvParams& p) {
  ConvResampleParams conv;
  conv.up = p.up;
  conv.down = p.down;
  conv.padding = {p.padding, p.padding, p.padding, p.padding};
  conv.flip_weight = p.flip_weight;
  return conv;
}

}  // namespace

ModulatedConvParts modulated_conv2d_parts(const at::Tensor& x_in, const at::Tensor& weight_in,
                                          const at::Tensor& styles_in, const at::Tensor& resample_filter,
                                          const ModConvParams& p, const ComputeSettings& compute) {
  const auto [weight, styles] = normalized_for(x_in, weight_in, styles_in, p);
  ModulatedConvParts parts;
  if (p.demodulate) parts.demod = demodulation_coefficients(weight, styles, compute);  // [N, O]
  const at::Tensor x = scale_planes(x_in, styles, compute);
  parts.y = conv2d_resample(x, weight_for(weight, x), resample_filter, resample_params(p), compute);
  return parts;
}

at::Tensor modulated_conv2d(const at::Tensor& x_in, const at::Tensor& weight_in, const at::Tensor& styles_in,
                            const at::Tensor& noise, const at::Tensor& resample_filter, const ModConvParams& p,
                            const ComputeSettings& compute) {
  const int64_t batch = x_in.size(0);
  if (!p.fused) {  // scale activations before and after a shared-weight convolution
    const ModulatedConvParts parts = modulated_conv2d_parts(x_in, weight_in, styles_in, resample_filter, p, compute);
    at::Tensor x = parts.y;
    if (p.demodulate && noise.defined()) {
      return at::addcmul(noise.to(x.scalar_type()), x, parts.demod.to(x.scalar_type()).reshape({batch, -1, 1, 1}));
    }
    if (p.demodulate) return x * parts.demod.to(x.scalar_type()).reshape({batch, -1, 1, 1});
    if (noise.defined()) return x.add_(noise.to(x.scalar_type()));
    return x;
  }

  // One grouped convolution with the batch folded into the channels.
  const auto [weight, styles] = normalized_for(x_in, weight_in, styles_in, p);
  const int64_t in_channels = weight.size(1), kh = weight.size(2), kw = weight.size(3);
  at::Tensor w = weight.unsqueeze(0) * styles.reshape({batch, 1, -1, 1, 1});  // [N, O, I, k, k]
  if (p.demodulate) w = w * demodulation_coefficients(weight, styles, compute).reshape({batch, -1, 1, 1, 1});
  ConvResampleParams conv = resample_params(p);
  conv.groups = batch;
  at::Tensor x = x_in.reshape({1, -1, x_in.size(2), x_in.size(3)});  // [1, N*I, H, W]
  w = w.reshape({-1, in_channels, kh, kw});                          // [N*O, I, k, k]
  x = conv2d_resample(x, w.to(x.scalar_type()), resample_filter, conv, compute);
  x = x.reshape({batch, -1, x.size(2), x.size(3)});  // [N, O, H', W']
  if (noise.defined()) x = x.add_(noise);
  return x;
}

}  // namespace sg2::ops
