#pragma once
// The per-element arithmetic of the CUDA kernels (fir_bias_act_kernels.cu), for the host as well as
// the device: the kernels run it per element, per tile or per 16-byte pack, and the CPU test suite
// runs the very same functions over whole tensors against the definition
// (tests/unit/nn/test_kernels_cuda.cpp), so the indexing is checked on every machine, GPU or not.
// Index is int32_t where every offset of a launch fits (fits_32bit_indices; 64-bit division costs a
// GPU tens of instructions), int64_t otherwise.

#include "fir_bias_act_kernels.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace sg2::ops::cuda {

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

// 0 <= i < n in one comparison.
template <typename Index>
SG2_HOST_DEVICE bool within(Index i, Index n) {
  using Unsigned = std::make_unsigned_t<Index>;
  return static_cast<Unsigned>(i) < static_cast<Unsigned>(n);
}

// An int fixed at compile time, for the tiled kernel's shapes (FixedFir).
template <int N>
struct Fixed {
  SG2_HOST_DEVICE constexpr operator int() const { return N; }
};

// The first tap k0 < up whose upsampled coordinate v0 + k0 holds a sample (up divides it), and that
// sample's index s0 = (v0 + k0) / up. Up: int, or Fixed<N> (the divisions then fold into shifts).
template <typename Index>
struct FirstTap {
  int k0;
  Index s0;
};

template <typename Index, typename Up>
SG2_HOST_DEVICE FirstTap<Index> first_sampled_tap(Index v0, Up up) {
  const Index phase = ((v0 % up) + up) % up;
  const int k0 = phase == 0 ? 0 : up - static_cast<int>(phase);
  return {k0, (v0 + k0) / up};  // exact: up divides v0 + k0
}

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
  const auto [k0, s0] = first_sampled_tap<Index>(o * down - pad, up);  // o * down - pad: tap 0's coordinate
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

// The tiled kernel's shapes, fixed at compile time: StyleGAN2's Taps x Taps filter alone, with 2x
// upsampling or with 2x downsampling (with_fixed_fir).
template <int Up, int Down, int Taps>
struct FixedFir {
  static constexpr int kUp = Up, kDown = Down, kTaps = Taps;
  static constexpr int kSpan = (Taps + Up - 1) / Up;  // the most taps per axis that read a sample
  // Outputs per thread, neighbours along the tile's y axis: without upsampling their taps read
  // overlapping windows of samples, which the thread loads once (upfirdn2d_window_outputs).
  static constexpr int kOutputs = Up == 1 ? 4 : 1;
  static constexpr int kWindow = (kOutputs - 1) * Down + Taps;  // samples along that axis
};

// The filter as each tap (ky, kx) applies it, gain included: the filter flipped (a convolution)
// unless flip_filter. Loaded once per thread; indexed only by compile-time values, so it stays in
// registers.
template <int Taps>
struct FirTaps {
  float v[Taps][Taps];
};

template <int Taps>
SG2_HOST_DEVICE FirTaps<Taps> load_fir_taps(const FirLaunch& job) {
  FirTaps<Taps> taps;
  for (int ky = 0; ky < Taps; ++ky) {
    for (int kx = 0; kx < Taps; ++kx) {
      const int fy = job.flip_filter ? ky : Taps - 1 - ky, fx = job.flip_filter ? kx : Taps - 1 - kx;
      taps.v[ky][kx] = job.filter[fy * Taps + fx] * job.gain;
    }
  }
  return taps;
}

// Tap (k0y + j * Up, k0x + i * Up), or 0 past the filter, for compile-time j and i and a run-time
// phase (k0y, k0x) < Up: a choice among Up^2 registers rather than an index into them.
template <int Up, int Taps>
SG2_HOST_DEVICE float phase_tap(const FirTaps<Taps>& taps, int j, int i, int k0y, int k0x) {
  float value = 0.0f;
  for (int py = 0; py < Up; ++py) {
    for (int px = 0; px < Up; ++px) {
      const int ky = py + j * Up, kx = px + i * Up;
      if (ky < Taps && kx < Taps && py == k0y && px == k0x) value = taps.v[ky][kx];
    }
  }
  return value;
}

// Where one axis's taps read for a fixed shape: tap k0 + j * Up reads sample s0 + j at `offset[j]`
// (in elements), when `reads[j]` (inside the input and the filter).
template <typename Index, typename Fir>
struct FixedAxis {
  int k0;
  Index offset[Fir::kSpan];
  bool reads[Fir::kSpan];
};

template <typename Index, typename Fir>
SG2_HOST_DEVICE FixedAxis<Index, Fir> fixed_axis(Index o, int pad, Index in_len, Index stride) {
  const auto first = first_sampled_tap<Index>(o * Fir::kDown - pad, Fixed<Fir::kUp>{});
  FixedAxis<Index, Fir> axis;
  axis.k0 = first.k0;
  for (int j = 0; j < Fir::kSpan; ++j) {
    const Index sample = first.s0 + j;
    axis.reads[j] = first.k0 + j * Fir::kUp < Fir::kTaps && within(sample, in_len);
    axis.offset[j] = axis.reads[j] ? sample * stride : 0;  // the product only where it is read (no overflow)
  }
  return axis;
}

// The output at pos for a fixed shape: every tap that can read a sample, those outside the input
// or past the filter skipped; the same sums in the same order as upfirdn2d_element. The offsets
// are found once per axis, so a tap costs a load and a multiply-add.
template <typename Index, typename Fir, typename Load>
SG2_HOST_DEVICE float upfirdn2d_fixed_at(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps,
                                         const OutputPosition<Index>& pos, const Load& load) {
  const auto rows = fixed_axis<Index, Fir>(pos.oy, job.pad_y0, static_cast<Index>(job.in_h),
                                           static_cast<Index>(job.stride_y));
  const auto cols = fixed_axis<Index, Fir>(pos.ox, job.pad_x0, static_cast<Index>(job.in_w),
                                           static_cast<Index>(job.stride_x));
  const Index base = pos.n * static_cast<Index>(job.stride_n) + pos.c * static_cast<Index>(job.stride_c);
  float sum = 0.0f;
  for (int j = 0; j < Fir::kSpan; ++j) {
    if (!rows.reads[j]) continue;
    const Index row = base + rows.offset[j];
    for (int i = 0; i < Fir::kSpan; ++i) {
      if (cols.reads[i]) sum += phase_tap<Fir::kUp>(taps, j, i, rows.k0, cols.k0) * load(row + cols.offset[i]);
    }
  }
  return sum;
}

// The kOutputs outputs of a thread from first on, along rows (contiguous y) or along columns
// (channels_last y), into sums (Up == 1). Their taps read overlapping windows: the thread loads each
// sample once into kWindow x kTaps registers (0 outside the input, which adds nothing), then each
// output sums its taps in the definition's order.
template <typename Index, typename Fir, bool kAlongRows, typename Load>
SG2_HOST_DEVICE void upfirdn2d_window_outputs(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps,
                                              const OutputPosition<Index>& first, float (&sums)[Fir::kOutputs],
                                              const Load& load) {
  static_assert(Fir::kUp == 1, "upsampled outputs alternate their taps' phases: one output per thread");
  constexpr int kRows = kAlongRows ? Fir::kWindow : Fir::kTaps, kCols = kAlongRows ? Fir::kTaps : Fir::kWindow;
  const Index y0 = first.oy * Fir::kDown - job.pad_y0, x0 = first.ox * Fir::kDown - job.pad_x0;
  const Index in_h = static_cast<Index>(job.in_h), in_w = static_cast<Index>(job.in_w);
  const Index base = first.n * static_cast<Index>(job.stride_n) + first.c * static_cast<Index>(job.stride_c);
  // Found once per column, not per sample; only inside the input, where fits_32bit_indices bounds
  // them (the stride of an axis of size 1 may be anything).
  Index column_offset[kCols];
  bool column_inside[kCols];
  for (int b = 0; b < kCols; ++b) {
    column_inside[b] = within(x0 + b, in_w);
    column_offset[b] = column_inside[b] ? (x0 + b) * static_cast<Index>(job.stride_x) : 0;
  }
  float window[kRows][kCols];
  for (int a = 0; a < kRows; ++a) {
    const bool row_inside = within(y0 + a, in_h);
    const Index row = row_inside ? base + (y0 + a) * static_cast<Index>(job.stride_y) : base;
    for (int b = 0; b < kCols; ++b) window[a][b] = row_inside && column_inside[b] ? load(row + column_offset[b]) : 0.0f;
  }
  for (int r = 0; r < Fir::kOutputs; ++r) {
    const int dy = kAlongRows ? r * Fir::kDown : 0, dx = kAlongRows ? 0 : r * Fir::kDown;
    float sum = 0.0f;
    for (int j = 0; j < Fir::kTaps; ++j) {
      for (int i = 0; i < Fir::kTaps; ++i) sum += taps.v[j][i] * window[j + dy][i + dx];
    }
    sums[r] = sum;
  }
}

// The tiled launch of a fixed shape: blocks of kTileX x kTileY threads, kOutputs outputs each.
// Contiguous y [N, C, H, W]: x runs over a row's columns, y over rows (kOutputs rows a thread), z
// over the planes (n, c); channels_last y [N, H, W, C]: x over a pixel's channels, y over columns
// (kOutputs a thread), z over the rows (n, oy). Either way a warp reads and writes along memory,
// and a thread finds its outputs with one division by a launch value (the generic kernel divides
// about ten times per output: output_position and the tap spans).
constexpr int kTileX = 32, kTileY = 8;
constexpr int64_t kMaxGridY = 65535, kMaxGridZ = 65535;  // CUDA's limits
constexpr int64_t kMinBlocks = 4096;                     // several waves of blocks on the largest GPUs
constexpr int64_t kSlicesPerThread = 4;                  // slices over which a thread's filter load pays

// Blocks along x and y, and the slices that the z blocks stride over.
struct FirTiles {
  int64_t x, y, slices;
};

inline FirTiles fir_tiles(const FirLaunch& job, int outputs_per_thread) {
  const auto blocks = [](int64_t n, int tile) { return (n + tile - 1) / tile; };
  const int tile_y = kTileY * outputs_per_thread;
  if (job.channels_last) return {blocks(job.channels, kTileX), blocks(job.out_w, tile_y), job.batch * job.out_h};
  return {blocks(job.out_w, kTileX), blocks(job.out_h, tile_y), job.batch * job.channels};
}

// z blocks of the launch: a thread strides over about kSlicesPerThread slices (it loads the filter
// once for them all) unless the grid would then have fewer than kMinBlocks blocks; within CUDA's limit.
inline int64_t fir_grid_z(const FirTiles& tiles) {
  const int64_t per_slice = tiles.x * tiles.y;
  const int64_t for_occupancy = (kMinBlocks + per_slice - 1) / per_slice;
  const int64_t amortized = (tiles.slices + kSlicesPerThread - 1) / kSlicesPerThread;
  return std::min({std::max(for_occupancy, amortized), tiles.slices, kMaxGridZ});
}

// The first output of thread (tx, ty) of block (bx, by) in slice, whose outputs_per_thread outputs
// follow along the tile's y axis; false when it lies past the output's edge.
template <typename Index>
SG2_HOST_DEVICE bool tile_position(const FirLaunch& job, Index bx, Index by, Index slice, int tx, int ty,
                                   int outputs_per_thread, OutputPosition<Index>& pos) {
  const Index along_x = bx * kTileX + tx, along_y = (by * kTileY + ty) * outputs_per_thread;
  const Index channels = static_cast<Index>(job.channels);
  const Index out_h = static_cast<Index>(job.out_h), out_w = static_cast<Index>(job.out_w);
  if (job.channels_last) {
    pos = {slice / out_h, along_x, slice % out_h, along_y};
    return along_x < channels && along_y < out_w;
  }
  pos = {slice / channels, slice % channels, along_y, along_x};
  return along_x < out_w && along_y < out_h;
}

// The r-th output of the thread whose first is `first` (tile_position); false past the output's edge.
template <typename Index>
SG2_HOST_DEVICE bool tile_output(const FirLaunch& job, OutputPosition<Index> first, int r, OutputPosition<Index>& pos) {
  pos = first;
  if (job.channels_last) {
    pos.ox += r;
    return pos.ox < static_cast<Index>(job.out_w);
  }
  pos.oy += r;
  return pos.oy < static_cast<Index>(job.out_h);
}

// Where pos lies in y's memory.
template <typename Index>
SG2_HOST_DEVICE Index output_offset(const FirLaunch& job, const OutputPosition<Index>& pos) {
  const Index channels = static_cast<Index>(job.channels);
  const Index out_h = static_cast<Index>(job.out_h), out_w = static_cast<Index>(job.out_w);
  if (job.channels_last) return ((pos.n * out_h + pos.oy) * out_w + pos.ox) * channels + pos.c;
  return ((pos.n * channels + pos.c) * out_h + pos.oy) * out_w + pos.ox;
}

// What one thread of the tiled launch computes: its outputs in slice, each handed to
// store(offset in y, value). The kernel runs it for every thread of its grid, the tests on the host.
template <typename Index, typename Fir, typename Load, typename Store>
SG2_HOST_DEVICE void upfirdn2d_tile_thread(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps, Index bx, Index by,
                                           Index slice, int tx, int ty, const Load& load, const Store& store) {
  OutputPosition<Index> first;
  if (!tile_position<Index>(job, bx, by, slice, tx, ty, Fir::kOutputs, first)) return;
  float sums[Fir::kOutputs];
  if constexpr (Fir::kOutputs == 1) {
    sums[0] = upfirdn2d_fixed_at<Index, Fir>(job, taps, first, load);
  } else if (job.channels_last) {
    upfirdn2d_window_outputs<Index, Fir, false>(job, taps, first, sums, load);
  } else {
    upfirdn2d_window_outputs<Index, Fir, true>(job, taps, first, sums, load);
  }
  for (int r = 0; r < Fir::kOutputs; ++r) {
    OutputPosition<Index> pos;
    if (tile_output<Index>(job, first, r, pos)) store(output_offset(job, pos), sums[r]);
  }
}

// Calls fn(FixedFir<up, down, 4>{}) and returns true where the tiled kernel is built for the launch:
// StyleGAN2's 4x4 filter alone, with 2x upsampling or with 2x downsampling (and so their gradients),
// 32-bit indices, a grid within CUDA's limits and, channels_last, at least kTileX / 2 channels (with
// fewer most threads would idle). Returns false otherwise: the generic kernel's cases.
template <typename Fn>
bool with_fixed_fir(const FirLaunch& job, Fn&& fn) {
  if (job.filter_h != 4 || job.filter_w != 4 || !fits_32bit_indices(job)) return false;
  if (fir_tiles(job, 1).y > kMaxGridY || (job.channels_last && job.channels < kTileX / 2)) return false;
  if (job.up == 1 && job.down == 1) return fn(FixedFir<1, 1, 4>{}), true;
  if (job.up == 2 && job.down == 1) return fn(FixedFir<2, 1, 4>{}), true;
  if (job.up == 1 && job.down == 2) return fn(FixedFir<1, 2, 4>{}), true;
  return false;
}

// bias_act's arithmetic is shared with the CPU kernel (../bias_act_elements.h).
using kernels::activate;
using kernels::activation_slope;
using kernels::bias_channel;

// The vectorised bias_act kernels move 16 bytes per load and store: kLanes elements of T.
constexpr int kLaneBytes = 16;
template <typename T>
constexpr int kLanes = kLaneBytes / static_cast<int>(sizeof(T));

// Whether the vectorised kernels take a launch of numel elements: a whole number of lanes, and
// every pointer 16-byte aligned (a fresh allocation is; a view with an offset may not be).
inline bool runs_in_lanes(int64_t numel, int lanes, std::initializer_list<const void*> pointers) {
  if (numel % lanes != 0) return false;
  return std::all_of(pointers.begin(), pointers.end(),
                     [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kLaneBytes == 0; });
}

// bias_act on Lanes consecutive elements of memory from element `first`, in place on their values,
// as one thread of the vectorised kernel runs it: the first's channel (bias_channel) and place in
// its run of inner elements cost two divisions; a pack within one channel (NCHW planes) reads its
// bias once, the others step through [outer, channels, inner]. bias_at(c): b[c], or 0.
template <int Lanes, typename Index, typename BiasAt>
SG2_HOST_DEVICE void bias_act_lanes(float (&v)[Lanes], Index first, Index channels, Index inner,
                                    const ActivationParams& a, BiasAt bias_at) {
  Index c = bias_channel(first, channels, inner), r = first % inner;
  if (r + Lanes <= inner) {
    const float bias = bias_at(c);
    for (int k = 0; k < Lanes; ++k) v[k] = activate(v[k] + bias, a);
    return;
  }
  for (int k = 0; k < Lanes; ++k) {
    v[k] = activate(v[k] + bias_at(c), a);
    if (++r == inner) {
      r = 0;
      if (++c == channels) c = 0;
    }
  }
}

// Whether bias_act_channel_pack takes a launch's packs: each a run of Lanes channels of one element
// (channels_last, or a fully connected layer's row: inner 1, channels a multiple of Lanes), so each
// starts at a channel that is a multiple of Lanes, and their biases are one aligned load.
inline bool runs_in_channel_packs(int64_t channels, int64_t inner, int lanes, const void* b) {
  return b != nullptr && inner == 1 && channels % lanes == 0 && reinterpret_cast<std::uintptr_t>(b) % kLaneBytes == 0;
}

// bias_act on a pack of Lanes channels from element `first`, in place on their values, where
// runs_in_channel_packs holds: bias_pack_at(c0, bias) loads the biases of channels c0 .. c0 + Lanes - 1
// at once, where bias_act_lanes would take them one at a time.
template <int Lanes, typename Index, typename BiasPackAt>
SG2_HOST_DEVICE void bias_act_channel_pack(float (&v)[Lanes], Index first, Index channels, const ActivationParams& a,
                                           BiasPackAt bias_pack_at) {
  float bias[Lanes];
  bias_pack_at(first % channels, bias);
  for (int k = 0; k < Lanes; ++k) v[k] = activate(v[k] + bias[k], a);
}

}  // namespace sg2::ops::cuda
