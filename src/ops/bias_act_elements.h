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

namespace sg2::ops::kernels {

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

// The end of a synthesis layer after its shared-weight convolution, on one [H, W] plane of sample n
// and channel c (conv_epilogue.h): y = clamp(act(x * demod + noise * noise_strength + bias) * gain),
// noise the plane of [N or 1, 1, H, W] for sample n. The sums are the reference's order in float32:
// addcmul(noise * noise_strength, x, demod), then bias_act.
struct EpiloguePlane {
  float demod, bias, noise_strength;
};

SG2_HOST_DEVICE float epilogue_element(float x, float noise, const EpiloguePlane& plane, const ActivationParams& a) {
  const float modulated = x * plane.demod + noise * plane.noise_strength;
  return activate(modulated + plane.bias, a);
}

// A call of the epilogue's kernels (sg2/ops/conv_epilogue.h) over planes = N * C planes of
// plane_elements each (the pixels), in memory of the storage type (float32 on the CPU): NCHW, or
// NHWC where channels_last. Plane p is sample p / channels and channel p % channels, and reads the
// noise of its sample from (p / channels) * noise_batch_stride (0: one noise plane for the batch).
// demod [planes], bias [channels] (or null: none), noise (or null: none) and the noise strength
// (one value) are float32 on x's device. The gradient may split each plane (NCHW) or sample's
// pixels (channels_last) into `chunks` runs and write sums per run (cuda/epilogue_elements.h).
// Forward: out = y from x. Gradient: out = dx from dy, y and x, and the sums (EpilogueSums) per
// plane, or per run where it splits them.
struct EpilogueLaunch {
  const void* x = nullptr;
  const void* dy = nullptr;
  const void* y = nullptr;
  void* out = nullptr;
  const float* demod = nullptr;
  const float* bias = nullptr;
  const float* noise = nullptr;
  const float* noise_strength = nullptr;
  float* sums = nullptr;
  int64_t planes = 0, channels = 1, plane_elements = 0, noise_batch_stride = 0, chunks = 1;
  bool channels_last = false;
};

// The launch's per-plane and per-pixel values, for the CPU kernel and the CUDA kernels alike.
// The noise strength, 0 without noise.
SG2_HOST_DEVICE float strength_of(const EpilogueLaunch& job) {
  return job.noise != nullptr ? *job.noise_strength : 0.0f;
}

// The plane's demodulation coefficient, bias and noise strength.
template <typename Index>
SG2_HOST_DEVICE EpiloguePlane epilogue_plane(const EpilogueLaunch& job, Index plane) {
  const float bias = job.bias != nullptr ? job.bias[plane % static_cast<Index>(job.channels)] : 0.0f;
  return {job.demod[plane], bias, strength_of(job)};
}

// Where the noise of sample `sample` starts.
template <typename Index>
SG2_HOST_DEVICE Index epilogue_noise_start(const EpilogueLaunch& job, Index sample) {
  return sample * static_cast<Index>(job.noise_batch_stride);
}

// The noise at `pixel` of sample n (0 without noise): one value for a channels_last pixel's channels.
template <typename Index>
SG2_HOST_DEVICE float pixel_noise(const EpilogueLaunch& job, Index n, Index pixel) {
  return job.noise != nullptr ? job.noise[epilogue_noise_start(job, n) + pixel] : 0.0f;
}

// What the epilogue's gradient sums over a plane, with g = dy * slope(y) the gradient of the
// pre-activation: g * x (the plane's demodulation coefficient's gradient), g (the bias's, once
// summed over the batch) and g * noise (the noise strength's, once summed over every plane).
struct EpilogueSums {
  float g_x = 0, g = 0, g_noise = 0;

  SG2_HOST_DEVICE void add(float g_i, float x, float noise) {
    g_x += g_i * x;
    g += g_i;
    g_noise += g_i * noise;
  }
  SG2_HOST_DEVICE void add(const EpilogueSums& other) {
    g_x += other.g_x;
    g += other.g;
    g_noise += other.g_noise;
  }
};

}  // namespace sg2::ops::kernels
