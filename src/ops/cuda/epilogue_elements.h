#pragma once
// The per-pack arithmetic of the synthesis layers' epilogue kernels (fir_bias_act_kernels.cu; the op
// is sg2/ops/conv_epilogue.h), for the host as well as the device, so that the CPU test suite runs the
// very functions the kernels run (tests/unit/nn/test_conv_epilogue.cpp). Two layouts:
// - NCHW: a plane (n, c) is plane_elements consecutive elements; a pack lies within one plane, and
//   the gradient runs a warp per run of a plane.
// - channels_last (NHWC): element (n, c, pixel) is at (n * plane_elements + pixel) * channels + c; a
//   pack is kLanes channels of one pixel, and the gradient runs a block per run of a sample's pixels,
//   a thread per pack of channels and row of pixels.
// Memory (the kernel's EpilogueMemory, the tests' host memory) reads and writes packs:
// load_x / load_dy / load_y(pack, v), store_dx(pack, v), load_floats(pointer, offset, v).

#include "fir_bias_act_elements.h"

#include <algorithm>
#include <cstdint>

namespace sg2::ops::cuda {

using kernels::epilogue_noise_start;
using kernels::epilogue_plane;
using kernels::EpiloguePlane;
using kernels::EpilogueSums;
using kernels::pixel_noise;
using kernels::strength_of;

inline int64_t element_bytes(ElementType type) { return type == ElementType::Float32 ? 4 : 2; }

// The threads of a channels_last gradient block; a pixel's packs of channels must fit in one.
constexpr int kEpilogueBlockThreads = 256;

// Whether the epilogue's kernels take the launch: 32-bit indices, every pointer aligned, and NCHW
// planes of whole 16-byte packs (so no pack straddles two planes) or channels_last pixels of whole
// packs, no more of them than a gradient block has threads.
inline bool epilogue_runs_in_lanes(const EpilogueLaunch& job, ElementType type) {
  const int64_t lanes = kLaneBytes / element_bytes(type), numel = job.planes * job.plane_elements;
  if (!fits_32bit_indices(numel)) return false;
  if (job.channels_last) {
    return job.channels % lanes == 0 && job.channels / lanes <= kEpilogueBlockThreads &&
           runs_in_lanes(numel, static_cast<int>(lanes), {job.x, job.dy, job.y, job.out, job.demod, job.bias});
  }
  return job.plane_elements % lanes == 0 &&
         runs_in_lanes(numel, static_cast<int>(lanes), {job.x, job.dy, job.y, job.out, job.noise});
}

// NCHW: how many warps share a plane of the gradient: enough for about 8192 warps in all (a few per
// SM of the largest GPUs, also at 1024x1024 with a handful of 32-channel planes), each with 64 packs
// or more.
inline int64_t epilogue_grad_chunks(int64_t planes, int64_t packs_per_plane) {
  constexpr int64_t kGradientWarps = 8192, kMinPacksPerWarp = 64;
  const int64_t wanted = (kGradientWarps + planes - 1) / std::max<int64_t>(planes, 1);
  return std::max<int64_t>(1, std::min(wanted, packs_per_plane / kMinPacksPerWarp));
}

// channels_last: the rows of pixels a gradient block runs side by side (its threads over a pixel's
// packs of channels).
inline int64_t epilogue_row_groups(int64_t packs_per_pixel) {
  return kEpilogueBlockThreads / std::max<int64_t>(packs_per_pixel, 1);
}

// channels_last: how many blocks share a sample's pixels in the gradient: enough for about 1024
// blocks (8192 warps) in all, each thread with 16 pixels or more.
inline int64_t epilogue_grad_pixel_chunks(int64_t samples, int64_t pixels, int64_t packs_per_pixel) {
  constexpr int64_t kGradientBlocks = 1024, kMinPixelsPerThread = 16;
  const int64_t wanted = (kGradientBlocks + samples - 1) / std::max<int64_t>(samples, 1);
  return std::max<int64_t>(1, std::min(wanted, pixels / (epilogue_row_groups(packs_per_pixel) * kMinPixelsPerThread)));
}

// The run [begin, end) of chunk `chunk` of `count` elements split into `chunks` runs.
template <typename Index>
struct Run {
  Index begin, end;
};

template <typename Index>
SG2_HOST_DEVICE Run<Index> chunk_run(Index count, Index chunks, Index chunk) {
  const Index size = (count + chunks - 1) / chunks, begin = chunk * size;
  return {begin, begin + size < count ? begin + size : count};
}

// Lanes noise values from offset, or zeros without noise.
template <int Lanes, typename Index, typename Memory>
SG2_HOST_DEVICE void epilogue_noise(const EpilogueLaunch& job, Index offset, const Memory& memory,
                                    float (&noise)[Lanes]) {
  if (job.noise != nullptr) return memory.load_floats(job.noise, offset, noise);
  for (int k = 0; k < Lanes; ++k) noise[k] = 0.0f;
}

// The gradient on pack `pack` in either layout, its coefficients given per lane: g = dy * slope(y)
// into add_sums(k, g, x), then dx = g * demod(k) stored through memory.store_dx. Without x (a
// launch whose x is null: only g's sums are wanted) x reads as 0, and is not loaded.
template <int Lanes, typename Index, typename Memory, typename Demod, typename AddSums>
SG2_HOST_DEVICE void epilogue_grad_pack(const EpilogueLaunch& job, const ActivationParams& a, Index pack,
                                        const Memory& memory, Demod demod, AddSums add_sums) {
  float g[Lanes], y[Lanes], x[Lanes];
  memory.load_dy(pack, g);
  memory.load_y(pack, y);
  if (job.x != nullptr) {
    memory.load_x(pack, x);
  } else {
    for (int k = 0; k < Lanes; ++k) x[k] = 0.0f;
  }
  for (int k = 0; k < Lanes; ++k) {
    g[k] *= activation_slope(y[k], a);
    add_sums(k, g[k], x[k]);
    g[k] *= demod(k);
  }
  memory.store_dx(pack, g);
}

// NCHW: the forward pass on pack `pack` of Lanes elements, as one thread of its kernel runs it: the
// pack's plane (one division), then epilogue_element on each; the values are left in v.
template <int Lanes, typename Index, typename Memory>
SG2_HOST_DEVICE void epilogue_pack(const EpilogueLaunch& job, const ActivationParams& a, Index pack,
                                   const Memory& memory, float (&v)[Lanes]) {
  const Index first = pack * Lanes, plane_elements = static_cast<Index>(job.plane_elements);
  const Index plane = first / plane_elements;
  const EpiloguePlane p = epilogue_plane(job, plane);
  float noise[Lanes];
  memory.load_x(pack, v);
  const Index sample = plane / static_cast<Index>(job.channels);
  epilogue_noise(job, epilogue_noise_start(job, sample) + (first - plane * plane_elements), memory, noise);
  for (int k = 0; k < Lanes; ++k) v[k] = epilogue_element(v[k], noise[k], p, a);
}

// NCHW: the gradient's share of lane `lane` of the warp_size threads that run chunk `chunk` of plane
// `plane` (job.chunks runs of packs per plane: epilogue_grad_chunks): its packs lane, lane +
// warp_size, ... of the chunk, dx stored through memory.store_dx(pack, v), and their sums returned
// (the kernel adds the lanes' up with shuffles, the tests on the host).
template <int Lanes, typename Index, typename Memory>
SG2_HOST_DEVICE EpilogueSums epilogue_grad_lane(const EpilogueLaunch& job, const ActivationParams& a, Index plane,
                                                Index chunk, int lane, int warp_size, const Memory& memory) {
  const Index packs = static_cast<Index>(job.plane_elements) / Lanes, first_pack = plane * packs;
  const Run<Index> run = chunk_run(packs, static_cast<Index>(job.chunks), chunk);
  const Index noise_start = epilogue_noise_start(job, plane / static_cast<Index>(job.channels));
  const float demod = job.demod[plane];
  EpilogueSums sums;
  for (Index k = run.begin + lane; k < run.end; k += warp_size) {
    float noise[Lanes];
    epilogue_noise(job, noise_start + k * Lanes, memory, noise);
    epilogue_grad_pack<Lanes>(
        job, a, first_pack + k, memory, [demod](int) { return demod; },
        [&](int j, float g, float x) { sums.add(g, x, noise[j]); });
  }
  return sums;
}

// channels_last: the demodulation coefficients and biases of Lanes channels from c0 of sample n.
template <int Lanes, typename Index, typename Memory>
SG2_HOST_DEVICE void channel_coefficients(const EpilogueLaunch& job, Index n, Index c0, const Memory& memory,
                                          float (&demod)[Lanes], float (&bias)[Lanes]) {
  memory.load_floats(job.demod, n * static_cast<Index>(job.channels) + c0, demod);
  if (job.bias != nullptr) return memory.load_floats(job.bias, c0, bias);
  for (int k = 0; k < Lanes; ++k) bias[k] = 0.0f;
}

// channels_last: the forward pass on pack `pack`, Lanes channels of one pixel: its row (sample and
// pixel) and first channel (two divisions), then epilogue_element on each; the values are left in v.
template <int Lanes, typename Index, typename Memory>
SG2_HOST_DEVICE void epilogue_pixel_pack(const EpilogueLaunch& job, const ActivationParams& a, Index pack,
                                         const Memory& memory, float (&v)[Lanes]) {
  const Index channels = static_cast<Index>(job.channels), first = pack * Lanes;
  const Index row = first / channels, c0 = first - row * channels;  // row: n * plane_elements + pixel
  const Index n = row / static_cast<Index>(job.plane_elements);
  float demod[Lanes], bias[Lanes];
  channel_coefficients(job, n, c0, memory, demod, bias);
  const float noise = pixel_noise(job, n, row - n * static_cast<Index>(job.plane_elements));
  const float strength = strength_of(job);
  memory.load_x(pack, v);
  for (int k = 0; k < Lanes; ++k) v[k] = epilogue_element(v[k], noise, EpiloguePlane{demod[k], bias[k], strength}, a);
}

// channels_last: one gradient thread's share of chunk `chunk` of sample n's pixels (job.chunks runs:
// epilogue_grad_pixel_chunks): pack of channels `channel_pack` of the pixels row_group, row_group +
// row_groups, ... of the run; dx stored through memory.store_dx(pack, v), and each channel's sums
// added to sums[k] (the kernel adds the row groups' up in shared memory, the tests on the host).
template <int Lanes, typename Index, typename Memory>
SG2_HOST_DEVICE void epilogue_grad_pixels(const EpilogueLaunch& job, const ActivationParams& a, Index n, Index chunk,
                                          Index channel_pack, Index row_group, Index row_groups,
                                          const Memory& memory, EpilogueSums (&sums)[Lanes]) {
  const Index pixels = static_cast<Index>(job.plane_elements);
  const Index packs_per_pixel = static_cast<Index>(job.channels) / Lanes;
  const Run<Index> run = chunk_run(pixels, static_cast<Index>(job.chunks), chunk);
  float demod[Lanes];
  memory.load_floats(job.demod, n * static_cast<Index>(job.channels) + channel_pack * Lanes, demod);
  for (Index pixel = run.begin + row_group; pixel < run.end; pixel += row_groups) {
    const float noise = pixel_noise(job, n, pixel);
    epilogue_grad_pack<Lanes>(
        job, a, (n * pixels + pixel) * packs_per_pixel + channel_pack, memory, [&demod](int k) { return demod[k]; },
        [&sums, noise](int k, float g, float x) { sums[k].add(g, x, noise); });
  }
}

}  // namespace sg2::ops::cuda
