#pragma once
// upfirdn2d in 16-byte lanes with the block's input staged in shared memory, for the launches of
// fir_lanes_elements.h (StyleGAN2's 4x4 filter alone, with 2x downsampling, with 2x upsampling).
// There each thread of the lanes kernel loads its whole window from global memory: 28 16-byte loads
// for 4 outputs of the 4x4 filter, 40 with downsampling, 4 for one output with upsampling: each
// sample is requested 7 times (2.5, 4). In the second H200 run every lanes launch ran at 3.7-4.3
// TB/s of requested bytes, 2.3-3.8x the DRAM floor (docs/performance.md), with the loads then
// waited for one by one: latency or the rate of requests bounded them, which that run cannot tell
// apart.
// Here a block first copies the samples its output tile reads (a tile of kRows x kGroups x kOutputs
// pixels and kPacks lanes of channels, plus the filter's reach) into shared memory, all its loads
// in flight at once, each sample once, 0 where x has none (1.63, 1.27 and 0.75 requests a sample);
// after a barrier each thread sums its outputs from there, the same taps in the same order as the
// lanes kernel (a sample outside x adds 0 there too), so the outputs are the generic kernel's bit
// for bit. Host and device: the CPU test suite runs every block of a launch on the host, its two
// phases one after the other (tests/unit/nn/test_kernels_cuda_lanes.cpp).

#include "fir_lanes_elements.h"

#include <cstdint>

namespace sg2::nn::cuda {

// A block's work: an output tile of kRows rows, kGroups x Fir::kOutputs columns and kPacks lanes
// of channels, one thread per (row, group, lane) with the lane fastest (a quarter warp's 16-byte
// accesses then cover 128 contiguous bytes, in shared memory and in y); the input tile it reads:
// [kInRows, kInCols, kPacks] lanes, 26.75 KB without resampling, 41.5 KB with 2x downsampling,
// 3 KB with 2x upsampling.
template <typename Fir>
struct FirStagedTile {
  static constexpr bool kDownsamples = Fir::kUp == 1 && Fir::kDown == 2;
  static constexpr int kPacks = 8;
  static constexpr int kGroups = kDownsamples ? 2 : 4;
  static constexpr int kRows = 8;
  static constexpr int kThreads = kPacks * kGroups * kRows;
  // The samples that n neighbouring outputs read along an axis: their taps land on (n - 1) * kDown +
  // kTaps neighbouring upsampled positions, which hold at most (that - 1) / kUp + 1 samples.
  static constexpr int samples_read_by(int n) { return ((n - 1) * Fir::kDown + Fir::kTaps - 1) / Fir::kUp + 1; }
  static constexpr int kInRows = samples_read_by(kRows);
  static constexpr int kInCols = samples_read_by(kGroups * Fir::kOutputs);
  static constexpr int kInPacks = kInRows * kInCols * kPacks;
  static constexpr int kLoadsPerThread = (kInPacks + kThreads - 1) / kThreads;
  // Blocks an SM is to hold at once (__launch_bounds__): with downsampling the compiler otherwise
  // keeps all 21 of a thread's staging loads in flight, in 167 registers (3 blocks of 128 threads).
  static constexpr int kMinBlocksPerSM = kDownsamples ? 4 : 3;
};

// The grid: x over the column tiles, y (striding) over every sample's row tiles, z over the tiles
// of kPacks lanes of channels.
struct FirStagedGrid {
  int64_t column_tiles, row_tiles, pack_tiles;
};

template <typename Fir>
FirStagedGrid fir_staged_grid(const FirLaunch& job, int lanes) {
  using Tile = FirStagedTile<Fir>;
  const auto tiles = [](int64_t n, int64_t per_tile) { return (n + per_tile - 1) / per_tile; };
  return {tiles(job.out_w, Tile::kGroups * Fir::kOutputs), job.batch * tiles(job.out_h, Tile::kRows),
          tiles(job.channels / lanes, Tile::kPacks)};
}

// Where a block's tile lies: its sample, first output row and column, first lane of channels, and
// the input row and column of its staged tile's first sample (negative in the padding).
template <typename Index>
struct FirStagedOrigin {
  Index n, oy0, ox0, pack0, iy0, ix0;
};

// The first input sample that output o's taps read (fir_bias_act_elements.h's first_sampled_tap
// at tap 0's upsampled coordinate); the samples of the tile's other outputs follow it.
template <typename Index, typename Fir>
SG2_HOST_DEVICE Index first_sample_read(Index o, int pad) {
  return first_sampled_tap<Index>(o * Fir::kDown - pad, Fixed<Fir::kUp>{}).s0;
}

template <typename Index, typename Fir>
SG2_HOST_DEVICE FirStagedOrigin<Index> fir_staged_origin(const FirLaunch& job, Index column_tile, Index row_tile,
                                                         Index pack_tile) {
  using Tile = FirStagedTile<Fir>;
  const Index row_tiles_per_sample = (static_cast<Index>(job.out_h) + Tile::kRows - 1) / Tile::kRows;
  FirStagedOrigin<Index> o;
  o.n = row_tile / row_tiles_per_sample;
  o.oy0 = (row_tile - o.n * row_tiles_per_sample) * Tile::kRows;
  o.ox0 = column_tile * (Tile::kGroups * Fir::kOutputs);
  o.pack0 = pack_tile * Tile::kPacks;
  o.iy0 = first_sample_read<Index, Fir>(o.oy0, job.pad_y0);
  o.ix0 = first_sample_read<Index, Fir>(o.ox0, job.pad_x0);
  return o;
}

// Phase 1, thread `thread` of the block: staged lanes i = thread, thread + kThreads, ... (lane
// fastest, then column, then row): copy(i, offset in x of its first element) where the sample is
// inside x and the lane within its channels, else zero(i).
template <typename Index, typename Fir, int Lanes, typename Copy, typename Zero>
SG2_HOST_DEVICE void fir_staged_load(const FirLaunch& job, const FirStagedOrigin<Index>& o, int thread,
                                     const Copy& copy, const Zero& zero) {
  using Tile = FirStagedTile<Fir>;
  const Index packs = static_cast<Index>(job.channels / Lanes);
  SG2_UNROLL for (int k = 0; k < Tile::kLoadsPerThread; ++k) {
    const int i = thread + k * Tile::kThreads;
    if (i >= Tile::kInPacks) break;
    const int pixel = i / Tile::kPacks, row = pixel / Tile::kInCols;
    const Index iy = o.iy0 + row, ix = o.ix0 + (pixel - row * Tile::kInCols), pack = o.pack0 + (i % Tile::kPacks);
    if (within(iy, static_cast<Index>(job.in_h)) && within(ix, static_cast<Index>(job.in_w)) && pack < packs) {
      copy(i, o.n * static_cast<Index>(job.stride_n) + iy * static_cast<Index>(job.stride_y) +
                  ix * static_cast<Index>(job.stride_x) + pack * Lanes);
    } else {
      zero(i);
    }
  }
}

// Phase 2, after the block's phase 1: thread `thread` sums its kOutputs outputs of one lane from
// the staged tile (load(i) reads staged lanes i) and hands them to store(offset in y, lanes).
template <typename Index, typename Fir, int Lanes, typename Load, typename Store>
SG2_HOST_DEVICE void fir_staged_thread(const FirLaunch& job, const FirTaps<Fir::kTaps>& taps,
                                       const FirStagedOrigin<Index>& o, int thread, const Load& load,
                                       const Store& store) {
  using Tile = FirStagedTile<Fir>;
  const int lane = thread % Tile::kPacks, group = thread / Tile::kPacks % Tile::kGroups;
  const int row = thread / (Tile::kPacks * Tile::kGroups);
  const Index oy = o.oy0 + row, ox0 = o.ox0 + group * Fir::kOutputs, pack = o.pack0 + lane;
  if (oy >= static_cast<Index>(job.out_h) || ox0 >= static_cast<Index>(job.out_w) ||
      pack >= static_cast<Index>(job.channels / Lanes)) {
    return;
  }
  float sums[Fir::kOutputs][Lanes] = {};
  if constexpr (Fir::kUp == 1) {
    SG2_UNROLL for (int j = 0; j < Fir::kTaps; ++j) {
      const int first = ((row * Fir::kDown + j) * Tile::kInCols + group * Fir::kOutputs * Fir::kDown) * Tile::kPacks;
      FirLanes<Lanes> window[Fir::kWindow];
      SG2_UNROLL for (int b = 0; b < Fir::kWindow; ++b) window[b] = load(first + b * Tile::kPacks + lane);
      add_window_row<Fir, Lanes>(taps, j, window, sums);
    }
  } else {
    // The staged tile as the upsampling lanes kernel's input: its rows and columns from (iy0, ix0)
    // on, the padding moved by as much, so each output finds its taps' samples there (0 for those
    // outside x; none it reads lies outside the tile).
    FirLaunch staged = job;
    staged.in_h = Tile::kInRows;
    staged.in_w = Tile::kInCols;
    staged.stride_x = Tile::kPacks * Lanes;
    staged.stride_y = Tile::kInCols * staged.stride_x;
    staged.pad_y0 = job.pad_y0 + static_cast<int>(o.iy0 * Fir::kUp - o.oy0 * Fir::kDown);
    staged.pad_x0 = job.pad_x0 + static_cast<int>(o.ix0 * Fir::kUp - o.ox0 * Fir::kDown);
    const auto load_element = [&](Index offset) { return load(static_cast<int>(offset / Lanes)); };
    fir_lanes_upsampled<Index, Fir, Lanes>(staged, taps, Index(lane * Lanes), Index(row), Index(group), sums[0],
                                           load_element);
  }
  store_lanes_outputs<Index, Fir, Lanes>(job, o.n, oy, ox0, pack * Lanes, sums, store);
}

}  // namespace sg2::nn::cuda
