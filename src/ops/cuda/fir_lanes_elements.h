#pragma once
// upfirdn2d in 16-byte lanes, for channels_last launches of StyleGAN2's shapes (the fixed 4x4
// filter alone, with 2x upsampling or with 2x downsampling: FixedFir): a thread computes
// Fir::kOutputs neighbouring output pixels in each of lanes_rows<Fir>() rows, of one pack of Lanes
// channels (8 float16 or bfloat16, 4 float32), so every tap is one 16-byte load of Lanes samples
// instead of one 2- or 4-byte load per sample; the warp's loads and stores run along a pixel's
// channels, then along the row. Each lane's taps are summed in the definition's order (row-major,
// the samples outside the input skipped), the generic kernel's sums exactly. Host and device, like fir_bias_act_elements.h: the CPU test suite
// runs every thread of a launch on the host (tests/unit/nn/test_kernels_cuda_lanes.cpp).

#include "fir_bias_act_elements.h"

#include <cstdint>

// A loop the device compiler unrolls whole (a row loop kept rolled indexes the taps dynamically,
// which puts them in local memory); nothing on the host.
#ifdef __CUDACC__
#define SG2_UNROLL _Pragma("unroll")
#else
#define SG2_UNROLL
#endif

namespace sg2::ops::cuda {

template <int Lanes>
struct FirLanes {
  float v[Lanes];
};

// Whether a launch runs in lanes of `lanes` elements: channels_last output, channels in whole
// lanes, x's channels adjacent and every pixel of x starting a lane (its strides multiples of
// `lanes`), both pointers 16-byte aligned, 32-bit indices.
inline bool fir_runs_in_lanes(const FirLaunch& job, int lanes) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kLaneBytes == 0; };
  return job.channels_last && job.channels % lanes == 0 && job.stride_c == 1 && job.stride_x % lanes == 0 &&
         job.stride_y % lanes == 0 && job.stride_n % lanes == 0 && aligned(job.x) && aligned(job.y) &&
         fits_32bit_indices(job);
}

// The launch: kFirLanesBlock threads a block, x over one output row's (column group, lane) pairs
// with the lane fastest, y (striding) over the rows of every sample.
constexpr int kFirLanesBlock = 256;

// The output rows a thread computes: with the filter alone two, which share the input rows they read
// (kTaps + 1 of them for two outputs where one output reads kTaps: with a row of outputs a thread,
// each input row came from L2 kTaps times over, once for each block whose outputs it reaches; 1.16-
// 1.19x on an H200); with upsampling one (its phases alternate), and with downsampling one (its
// output rows overlap by half already: two rows a thread gained nothing there, and spilled).
template <typename Fir>
SG2_HOST_DEVICE constexpr int lanes_rows() {
  return Fir::kUp == 1 && Fir::kDown == 1 ? 2 : 1;
}

struct FirLanesGrid {
  int64_t threads_per_row, blocks_x, rows;  // rows: of threads, lanes_rows output rows each
};

// A row of threads per lanes_rows<Fir>() output rows; each thread Fir::kOutputs pixels of them.
template <typename Fir>
FirLanesGrid fir_lanes_grid(const FirLaunch& job, int lanes) {
  constexpr int64_t kRows = lanes_rows<Fir>();
  const int64_t groups = (job.out_w + Fir::kOutputs - 1) / Fir::kOutputs;
  const int64_t threads = groups * (job.channels / lanes);
  const int64_t row_groups = (job.out_h + kRows - 1) / kRows;
  return {threads, (threads + kFirLanesBlock - 1) / kFirLanesBlock, job.batch * row_groups};
}

// sums[r][k] += tap * v[k] for every output r that tap (j, column b of the thread's window) reaches.
template <typename Fir, int Lanes>
SG2_HOST_DEVICE void add_window_column(const FirTaps<Fir::kTaps>& taps, int j, int b, const FirLanes<Lanes>& v,
                                       float (&sums)[Fir::kOutputs][Lanes]) {
  for (int r = 0; r < Fir::kOutputs; ++r) {
    const int i = b - r * Fir::kDown;
    if (i < 0 || i >= Fir::kTaps) continue;
    for (int k = 0; k < Lanes; ++k) sums[r][k] += taps.v[j][i] * v.v[k];
  }
}

// Row j of a thread's window (kWindow samples, 0 where x has none) into its kOutputs sums.
template <typename Fir, int Lanes>
SG2_HOST_DEVICE void add_window_row(const FirTaps<Fir::kTaps>& taps, int j, const FirLanes<Lanes> (&window)[Fir::kWindow],
                                    float (&sums)[Fir::kOutputs][Lanes]) {
  SG2_UNROLL for (int b = 0; b < Fir::kWindow; ++b) add_window_column<Fir, Lanes>(taps, j, b, window[b], sums);
}

// Without upsampling: the kOutputs outputs at columns ox0.. of Rows rows from oy0 read a window of
// kWindow columns and the rows those outputs reach, streamed row by row; each input row goes into
// the sums of every output row it reaches, so each output still gets its taps in row-major order. A
// row's kWindow loads come first, each from an address inside x (a sample outside the input reads
// the row's first pixel, then counts as 0, which adds nothing to a sum with finite taps: the same
// sums as skipping it), so the compiler issues them ahead of the sums; with a branch around each
// load it had kept them one after another, each waited for in turn (scripts/bench/kernel_sass.sh).
// A row outside the input is skipped by a branch: a block computes the same output rows in every
// thread, so its threads all take it alike.
template <typename Index, typename Fir, int Rows, int Lanes, typename Load>
SG2_HOST_DEVICE void fir_lanes_window(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps, Index base, Index oy0,
                                      Index ox0, float (&sums)[Rows][Fir::kOutputs][Lanes], const Load& load) {
  constexpr int kInputRows = (Rows - 1) * Fir::kDown + Fir::kTaps;
  const Index y0 = oy0 * Fir::kDown - job.pad_y0, x0 = ox0 * Fir::kDown - job.pad_x0;
  const Index in_h = static_cast<Index>(job.in_h), in_w = static_cast<Index>(job.in_w);
  SG2_UNROLL for (int i = 0; i < kInputRows; ++i) {
    if (!within(y0 + i, in_h)) continue;
    const Index row = base + (y0 + i) * static_cast<Index>(job.stride_y);
    FirLanes<Lanes> window[Fir::kWindow];
    SG2_UNROLL for (int b = 0; b < Fir::kWindow; ++b) {
      const bool inside = within(x0 + b, in_w);
      window[b] = load(row + (inside ? x0 + b : Index(0)) * static_cast<Index>(job.stride_x));
      if (!inside) window[b] = FirLanes<Lanes>{};
    }
    SG2_UNROLL for (int r = 0; r < Rows; ++r) {
      const int j = i - r * Fir::kDown;  // the filter's row that input row i is for output row r
      if (j >= 0 && j < Fir::kTaps) add_window_row<Fir, Lanes>(taps, j, window, sums[r]);
    }
  }
}

// With upsampling: one output, the taps of its phase (upfirdn2d_fixed_at's sums, in lanes).
template <typename Index, typename Fir, int Lanes, typename Load>
SG2_HOST_DEVICE void fir_lanes_upsampled(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps, Index base, Index oy,
                                         Index ox, float (&sum)[Lanes], const Load& load) {
  const auto rows =
      fixed_axis<Index, Fir>(oy, job.pad_y0, static_cast<Index>(job.in_h), static_cast<Index>(job.stride_y));
  const auto cols =
      fixed_axis<Index, Fir>(ox, job.pad_x0, static_cast<Index>(job.in_w), static_cast<Index>(job.stride_x));
  for (int j = 0; j < Fir::kSpan; ++j) {
    if (!rows.reads[j]) continue;
    for (int i = 0; i < Fir::kSpan; ++i) {
      if (!cols.reads[i]) continue;
      const float tap = phase_tap<Fir::kUp>(taps, j, i, rows.k0, cols.k0);
      const FirLanes<Lanes> v = load(base + rows.offset[j] + cols.offset[i]);
      for (int k = 0; k < Lanes; ++k) sum[k] += tap * v.v[k];
    }
  }
}

// A thread's sums, outputs (n, oy, ox0 + r) for r < kOutputs inside y, channels c0.. (y is
// channels_last): store(offset in y of the first channel, lanes).
template <typename Index, typename Fir, int Lanes, typename Store>
SG2_HOST_DEVICE void store_lanes_outputs(const FirLaunch& job, Index n, Index oy, Index ox0, Index c0,
                                         const float (&sums)[Fir::kOutputs][Lanes], const Store& store) {
  const Index out_h = static_cast<Index>(job.out_h), out_w = static_cast<Index>(job.out_w);
  for (int r = 0; r < Fir::kOutputs && ox0 + r < out_w; ++r) {
    FirLanes<Lanes> out;
    for (int k = 0; k < Lanes; ++k) out.v[k] = sums[r][k];
    store(((n * out_h + oy) * out_w + ox0 + r) * static_cast<Index>(job.channels) + c0, out);
  }
}

// What thread t of row of threads `row` (n * row groups + g) computes: the outputs of rows g *
// lanes_rows<Fir>() on (those inside y), Fir::kOutputs pixels of each from column (t / lanes of a
// pixel) * kOutputs on, channels (t % lanes of a pixel) * Lanes on, each handed to store(offset in y
// of its first channel, lanes). load(offset) reads Lanes samples of x.
template <typename Index, typename Fir, int Lanes, typename Load, typename Store>
SG2_HOST_DEVICE void upfirdn2d_lanes_thread(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps, Index t, Index row,
                                            const Load& load, const Store& store) {
  constexpr int kRows = lanes_rows<Fir>();
  const Index channels = static_cast<Index>(job.channels), lanes_per_pixel = channels / Lanes;
  const Index out_h = static_cast<Index>(job.out_h), out_w = static_cast<Index>(job.out_w);
  const Index row_groups = (out_h + kRows - 1) / kRows;
  const Index group = t / lanes_per_pixel, c0 = (t - group * lanes_per_pixel) * Lanes;
  const Index n = row / row_groups, oy0 = (row - n * row_groups) * kRows, ox0 = group * Fir::kOutputs;
  if (ox0 >= out_w) return;
  const Index base = n * static_cast<Index>(job.stride_n) + c0;  // stride_c == 1 (fir_runs_in_lanes)
  float sums[kRows][Fir::kOutputs][Lanes] = {};
  if constexpr (Fir::kUp == 1) {
    fir_lanes_window<Index, Fir, kRows, Lanes>(job, taps, base, oy0, ox0, sums, load);
  } else {
    static_assert(Fir::kOutputs == 1 && kRows == 1,
                  "upsampled outputs alternate their taps' phases: one output per thread");
    fir_lanes_upsampled<Index, Fir, Lanes>(job, taps, base, oy0, ox0, sums[0][0], load);
  }
  SG2_UNROLL for (int r = 0; r < kRows; ++r) {  // unrolled: sums stay in registers
    if (oy0 + r < out_h) store_lanes_outputs<Index, Fir, Lanes>(job, n, oy0 + r, ox0, c0, sums[r], store);
  }
}

}  // namespace sg2::ops::cuda
