#pragma once
// upfirdn2d: upsample by zero insertion, pad, FIR filter, downsample (reference:
// torch_utils/ops/upfirdn2d.py). The op, its reference, its autograd function and the choice between
// them are in src/ops/upfirdn2d.cpp; the raw kernels in upfirdn2d_cpu.cpp (CPU) and cuda/ (CUDA).

#include "sg2/ops/kernels.h"
#include "sg2/ops/compute_settings.h"

#include <ATen/ATen.h>

#include <array>
#include <vector>

namespace sg2::ops {

// Normalized 2-D FIR filter [k, k] from 1-D taps (outer product, sum 1), e.g. {1,3,3,1}.
at::Tensor setup_filter(const std::vector<float>& taps);

// The layout an op keeps for x's outputs (MixedPrecision::channels_last): ChannelsLast when x is
// channels_last, else Contiguous.
at::MemoryFormat layout_of(const at::Tensor& x);

// y in layout_of(x): itself when contiguous or already so, else a channels_last copy, whatever
// path computed it.
at::Tensor keeps_channels_last(const at::Tensor& y, const at::Tensor& x);

// Padding {x0, x1, y0, y1}; negative values crop.
using Padding = std::array<int64_t, 4>;

struct FirParams {
  int64_t up = 1;
  int64_t down = 1;
  Padding padding{0, 0, 0, 0};
  bool flip_filter = false;
  double gain = 1.0;
};

// Upsample (zero insertion), pad, FIR filter, downsample (keep every `down`-th pixel).
// x: [N, C, H, W], f: [k, k] -> [N, C, (H*up + py0 + py1 - k + 1) / down, ...], channels_last when
// x is.
at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const FirParams& p, const ComputeSettings& compute = {});
at::Tensor upfirdn2d_reference(const at::Tensor& x, const at::Tensor& f, const FirParams& p);

// 2x upsampling / downsampling that keep the image centered, as the reference helpers.
at::Tensor upsample2d(const at::Tensor& x, const at::Tensor& f, int64_t up = 2, const ComputeSettings& compute = {});
at::Tensor downsample2d(const at::Tensor& x, const at::Tensor& f, int64_t down = 2, const ComputeSettings& compute = {});

}  // namespace sg2::ops

namespace sg2::ops::kernels {

// The kernel (kernels::supported(x) must hold), differentiable to any order: its gradient is again
// an upfirdn2d (flipped filter, up and down swapped) through the same kernel choice, so R1 and path
// length get second derivatives.
at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p, Kernel kernel = Kernel::Auto);

// The CUDA kernel that Auto runs on these arguments: ChannelLanes, Tiled or PerElement (also
// wherever no CUDA kernel runs).
Kernel upfirdn2d_auto_kernel(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);

// The raw forward kernel, no autograd: the one `kernel` names where it takes the arguments, else
// Auto's (kernel.h; Reference is not a kernel).
at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p,
                             Kernel kernel = Kernel::Auto);

// The parameters of the adjoint of upfirdn2d with `p` for an input of size in_h x in_w.
ops::FirParams upfirdn2d_adjoint(const ops::FirParams& p, int64_t filter_h, int64_t filter_w, int64_t in_h,
                                 int64_t in_w, int64_t out_h, int64_t out_w);

// upfirdn2d's output height and width; fails naming the sizes when the filter does not fit.
std::array<int64_t, 2> upfirdn2d_output_size(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);

}  // namespace sg2::ops::kernels
