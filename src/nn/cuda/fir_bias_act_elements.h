#pragma once
// The per-element arithmetic of the CUDA kernels (fir_bias_act_kernels.cu), for the host as well as
// the device: the kernels run it one thread per element, and the CPU test suite runs the very same
// functions over whole tensors against the definition (tests/unit/nn/test_kernels_cuda.cpp), so the
// indexing is checked on every machine, GPU or not.

#include "fir_bias_act_kernels.h"

#include <cstdint>

namespace sg2::nn::cuda {

// The input sample that output row/column o reads through tap k: the upsampled coordinate
// v = o*down + k - pad lands on sample v/up when 0 <= v < in_len*up and up divides v.
SG2_HOST_DEVICE bool fir_source_index(int64_t o, int k, int down, int pad, int up, int64_t in_len, int64_t* src) {
  const int64_t v = o * down + k - pad;
  if (v < 0 || v >= in_len * up || v % up != 0) return false;
  *src = v / up;
  return true;
}

// Output element i of y [N, C, out_h, out_w] (row-major); load(offset) reads x at an element offset.
template <typename Load>
SG2_HOST_DEVICE float upfirdn2d_element(const FirLaunch& job, int64_t i, const Load& load) {
  const int64_t ox = i % job.out_w, oy = (i / job.out_w) % job.out_h;
  const int64_t plane = i / (job.out_w * job.out_h);
  const int64_t base = (plane / job.channels) * job.stride_n + (plane % job.channels) * job.stride_c;
  float sum = 0.0f;
  for (int ky = 0; ky < job.filter_h; ++ky) {
    int64_t iy;
    if (!fir_source_index(oy, ky, job.down, job.pad_y0, job.up, job.in_h, &iy)) continue;
    const int fy = job.flip_filter ? ky : job.filter_h - 1 - ky;
    for (int kx = 0; kx < job.filter_w; ++kx) {
      int64_t ix;
      if (!fir_source_index(ox, kx, job.down, job.pad_x0, job.up, job.in_w, &ix)) continue;
      const int fx = job.flip_filter ? kx : job.filter_w - 1 - kx;
      sum += job.filter[fy * job.filter_w + fx] * job.gain * load(base + iy * job.stride_y + ix * job.stride_x);
    }
  }
  return sum;
}

// bias_act's arithmetic is shared with the CPU kernel (../bias_act_elements.h).
using kernels::activate;
using kernels::activation_slope;
using kernels::bias_channel;

}  // namespace sg2::nn::cuda
