#pragma once
// The per-element arithmetic of bias_act, one definition for the CPU kernel (bias_act_cpu.cpp), the
// CUDA kernels (cuda/fir_bias_act_kernels.cu, compiled by nvcc without LibTorch) and their tests.

#include <cstdint>

#ifndef SG2_HOST_DEVICE
#ifdef __CUDACC__
#define SG2_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SG2_HOST_DEVICE inline
#endif
#endif

namespace sg2::nn::kernels {

// act: 0 linear, 1 relu, 2 lrelu (ops::Activation's order), with the defaults of alpha and gain
// resolved. clamp < 0: none.
struct ActivationParams {
  int act;
  float alpha, gain, clamp;
};

// The channel of element i of x viewed as [outer, channels, inner]; Index: int32_t or int64_t.
template <typename Index>
SG2_HOST_DEVICE Index bias_channel(Index i, Index channels, Index inner) {
  return (i / inner) % channels;
}

// clamp(act(v) * gain). The clamp is the reference's CUDA kernel's (bias_act.cu), which float16
// training runs: a value not strictly inside (-clamp, clamp) takes the bound of its sign, so NaN
// becomes -clamp (and its slope 0) instead of reaching the logits and pl_mean. The reference op
// (bias_act_reference, the reference's _bias_act_ref) keeps NaN.
SG2_HOST_DEVICE float activate(float v, const ActivationParams& a) {
  if (a.act == 1) v = v > 0.0f ? v : 0.0f;
  if (a.act == 2) v = v > 0.0f ? v : v * a.alpha;
  v *= a.gain;
  if (a.clamp >= 0.0f && !(v > -a.clamp && v < a.clamp)) v = v >= 0.0f ? a.clamp : -a.clamp;
  return v;
}

// d y / d (x + b) expressed through y alone (gain > 0, alpha >= 0).
SG2_HOST_DEVICE float activation_slope(float y, const ActivationParams& a) {
  float s = a.gain;
  if (a.act == 1) s = y > 0.0f ? a.gain : 0.0f;
  if (a.act == 2) s = y > 0.0f ? a.gain : a.gain * a.alpha;
  if (a.clamp >= 0.0f && !(y > -a.clamp && y < a.clamp)) s = 0.0f;
  return s;
}

}  // namespace sg2::nn::kernels
