#pragma once
// The per-element arithmetic of the CUDA kernels (fir_bias_act_kernels.cu), for the host as well as
// the device: the kernels run it one thread per element, and the CPU test suite runs the very same
// functions over whole tensors against the definition (tests/unit/nn/test_kernels_cuda.cpp), so the
// indexing is checked on every machine, GPU or not. Index is int32_t where every offset of a launch
// fits (fits_32bit_indices; 64-bit division costs a GPU tens of instructions), int64_t otherwise.

#include "fir_bias_act_kernels.h"

#include <cstdint>

namespace sg2::nn::cuda {

// Offsets, output indices and upsampled coordinates of a launch stay below this bound, with room for
// a grid-stride step (at most 2^24 threads) on top.
constexpr int64_t kMax32BitIndex = int64_t{1} << 30;

// Whether int32_t holds every index of the launch: outputs, input offsets and the upsampled, padded
// coordinates of both axes.
inline bool fits_32bit_indices(const FirLaunch& job) {
  const int64_t outputs = job.batch * job.channels * job.out_h * job.out_w;
  const int64_t last_input = (job.batch - 1) * job.stride_n + (job.channels - 1) * job.stride_c +
                             (job.in_h - 1) * job.stride_y + (job.in_w - 1) * job.stride_x;
  const auto magnitude = [](int64_t v) { return v < 0 ? -v : v; };
  const int64_t span_y = (job.out_h + job.filter_h) * job.down + job.in_h * job.up + 2 * magnitude(job.pad_y0);
  const int64_t span_x = (job.out_w + job.filter_w) * job.down + job.in_w * job.up + 2 * magnitude(job.pad_x0);
  return outputs < kMax32BitIndex && last_input < kMax32BitIndex && span_y < kMax32BitIndex &&
         span_x < kMax32BitIndex;
}

inline bool fits_32bit_indices(int64_t numel) { return numel < kMax32BitIndex; }

// The filter taps that output position o reads along one axis: tap first_tap + j * up reads input
// sample first_src + j, for j < count. Tap k lands on the upsampled, padded coordinate
// v = o * down + k - pad, which holds an input sample when up divides v and 0 <= v < in_len * up;
// so the taps that read are every up-th one from the first k with up | v, cut to the input.
template <typename Index>
struct TapSpan {
  int first_tap = 0;
  Index first_src = 0;
  int count = 0;
};

template <typename Index>
SG2_HOST_DEVICE TapSpan<Index> fir_tap_span(Index o, int taps, int down, int pad, int up, Index in_len) {
  const Index v0 = o * down - pad;  // the coordinate of tap 0
  const Index phase = ((v0 % up) + up) % up;
  const int k0 = phase == 0 ? 0 : up - static_cast<int>(phase);
  const Index s0 = (v0 + k0) / up;  // exact: up divides v0 + k0
  const Index in_filter = k0 < taps ? (taps - k0 + up - 1) / up : 0;
  const Index j_begin = s0 < 0 ? -s0 : 0;
  const Index j_end = in_len - s0 < in_filter ? in_len - s0 : in_filter;
  TapSpan<Index> span;
  if (j_end <= j_begin) return span;
  span.first_tap = k0 + static_cast<int>(j_begin) * up;
  span.first_src = s0 + j_begin;
  span.count = static_cast<int>(j_end - j_begin);
  return span;
}

// The coordinates of output element i in y's memory order.
template <typename Index>
struct OutputPosition {
  Index n, c, oy, ox;
};

template <typename Index>
SG2_HOST_DEVICE OutputPosition<Index> output_position(const FirLaunch& job, Index i) {
  const Index out_w = static_cast<Index>(job.out_w), out_h = static_cast<Index>(job.out_h);
  const Index channels = static_cast<Index>(job.channels);
  OutputPosition<Index> pos;
  if (job.channels_last) {  // [N, out_h, out_w, C]
    pos.c = i % channels;
    const Index pixel = i / channels;
    pos.ox = pixel % out_w;
    pos.oy = (pixel / out_w) % out_h;
    pos.n = pixel / out_w / out_h;
  } else {  // [N, C, out_h, out_w]
    pos.ox = i % out_w;
    const Index rest = i / out_w;
    pos.oy = rest % out_h;
    pos.c = (rest / out_h) % channels;
    pos.n = rest / out_h / channels;
  }
  return pos;
}

// Output element i of y in its memory order (output_position); load(offset) reads x at an element
// offset. The taps are summed in row-major tap order, as the definition does.
template <typename Index, typename Load>
SG2_HOST_DEVICE float upfirdn2d_element(const FirLaunch& job, Index i, const Load& load) {
  const auto [n, channel, oy, ox] = output_position<Index>(job, i);
  const Index base = n * static_cast<Index>(job.stride_n) + channel * static_cast<Index>(job.stride_c);
  const TapSpan<Index> rows =
      fir_tap_span<Index>(oy, job.filter_h, job.down, job.pad_y0, job.up, static_cast<Index>(job.in_h));
  const TapSpan<Index> cols =
      fir_tap_span<Index>(ox, job.filter_w, job.down, job.pad_x0, job.up, static_cast<Index>(job.in_w));
  float sum = 0.0f;
  for (int r = 0; r < rows.count; ++r) {
    const int ky = rows.first_tap + r * job.up;
    const int fy = job.flip_filter ? ky : job.filter_h - 1 - ky;
    const Index row = base + (rows.first_src + r) * static_cast<Index>(job.stride_y);
    for (int c = 0; c < cols.count; ++c) {
      const int kx = cols.first_tap + c * job.up;
      const int fx = job.flip_filter ? kx : job.filter_w - 1 - kx;
      sum += job.filter[fy * job.filter_w + fx] * job.gain *
             load(row + (cols.first_src + c) * static_cast<Index>(job.stride_x));
    }
  }
  return sum;
}

// bias_act's arithmetic is shared with the CPU kernel (../bias_act_elements.h).
using kernels::activate;
using kernels::activation_slope;
using kernels::bias_channel;

}  // namespace sg2::nn::cuda
