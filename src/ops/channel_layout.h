#pragma once
// How the kernels see a tensor's memory (bias_act_cpu.cpp, conv_epilogue_cpu.cpp,
// cuda/kernels_cuda.cpp): any dense layout, contiguous or channels_last alike, kept from input to
// output, so that a channels_last network pays no transposes around them.

#include "bias_act_elements.h"
#include "sg2/core/error.h"
#include "sg2/ops/conv_epilogue.h"

#include <ATen/ATen.h>

#include <cstdint>

namespace sg2::ops::kernels {

// x itself when its elements fill its memory without gaps or overlaps (any order of dimensions),
// else a copy that does, channels_last when x suggests it.
inline at::Tensor dense(const at::Tensor& x) {
  return x.is_non_overlapping_and_dense() ? x : x.contiguous(x.suggest_memory_format());
}

// t with like's type and strides: itself when it has them, else a copy (like: dense).
inline at::Tensor laid_out_like(const at::Tensor& t, const at::Tensor& like) {
  SG2_CHECK(t.sizes() == like.sizes(), "expected a tensor of shape {}, got {}", like.sizes(), t.sizes());
  if (t.scalar_type() == like.scalar_type() && t.strides() == like.strides()) return t;
  return at::empty_like(like).copy_(t);
}

// A dense tensor's memory seen as [outer, channels, inner] around dimension `dim`: element i of
// memory belongs to channel (i / inner) % channels. inner is dim's stride (the size of what is laid
// out inside it: W*H when contiguous, 1 when channels_last).
struct ChannelLayout {
  int64_t outer = 0, channels = 1, inner = 1;
};

inline ChannelLayout channel_layout(const at::Tensor& x, int64_t dim) {
  ChannelLayout l;
  l.channels = dim < x.dim() ? x.size(dim) : 1;
  l.inner = l.channels > 1 ? x.stride(dim) : 1;
  l.outer = x.numel() == 0 ? 0 : x.numel() / (l.channels * l.inner);
  return l;
}

// b: [channels] or undefined.
inline void check_bias(const at::Tensor& b, const at::Tensor& x, int64_t dim, const ChannelLayout& l) {
  SG2_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == l.channels),
            "bias_act: bias of shape {} does not match x {} at dim {}", b.sizes(), x.sizes(), dim);
}

// The CUDA kernels read and write whole 16-byte packs (cuda::kLaneBytes).
constexpr std::uintptr_t kPackBytes = 16;

// t (dense) with its memory starting on a pack boundary: t itself where it does, else a copy in
// t's layout.
inline at::Tensor aligned(const at::Tensor& t) {
  return reinterpret_cast<std::uintptr_t>(t.data_ptr()) % kPackBytes == 0 ? t : t.clone();
}

// t contiguous, its memory starting on a pack boundary.
inline at::Tensor contiguous_aligned(const at::Tensor& t) { return aligned(t.contiguous()); }

// Whether the epilogue's kernels take x's layout: [N, C, H, W], contiguous or channels_last.
inline bool epilogue_takes_layout(const at::Tensor& x) {
  return x.dim() == 4 && (x.is_contiguous() || x.is_contiguous(at::MemoryFormat::ChannelsLast));
}

// Whether the epilogue's kernels see x's memory as NHWC: channels_last and not also contiguous
// (one channel, or one pixel, is both, and runs as NCHW).
inline bool epilogue_channels_last(const at::Tensor& x) {
  return !x.is_contiguous() && x.is_contiguous(at::MemoryFormat::ChannelsLast);
}

// The launch's layout and shape from x (epilogue_takes_layout), and x itself.
inline EpilogueLaunch epilogue_launch_for(const at::Tensor& x) {
  EpilogueLaunch job;
  job.channels_last = epilogue_channels_last(x);
  job.x = x.data_ptr();
  job.channels = x.size(1);
  job.planes = x.size(0) * job.channels;
  job.plane_elements = x.size(2) * x.size(3);
  return job;
}

// The epilogue's kernels' view of t; the caller sets out, and dy, y and sums for the gradient, all
// laid out as x.
inline EpilogueLaunch epilogue_launch(const EpilogueTensors& t) {
  EpilogueLaunch job = epilogue_launch_for(t.x);
  job.demod = t.demod.data_ptr<float>();
  job.bias = t.bias.defined() ? t.bias.data_ptr<float>() : nullptr;
  if (t.noise.defined()) {
    job.noise = t.noise.data_ptr<float>();
    job.noise_strength = t.noise_strength.data_ptr<float>();
    job.noise_batch_stride = t.noise.size(0) == 1 ? 0 : job.plane_elements;
  }
  return job;
}

}  // namespace sg2::ops::kernels
