#pragma once
// Launchers of the CUDA kernels for upfirdn2d and bias_act (fir_bias_act_kernels.cu). Plain C++ on
// raw device pointers, so that nvcc compiles the kernels without LibTorch's headers; the tensor
// side (shapes, dtypes, streams, autograd) is in kernels_cuda.cpp. Every launch is asynchronous on
// `stream` and throws std::runtime_error (naming the kernel) when the launch fails.

#include "../bias_act_elements.h"
#include "sg2/ops/kernel.h"

#include <cstdint>
#include <string>

namespace sg2::ops::cuda {

using kernels::ActivationParams;
using kernels::EpilogueLaunch;

enum class ElementType { Float32, Float16, BFloat16 };

// y [N, C, out_h, out_w] (contiguous, or channels_last: NHWC in memory) from x [N, C, in_h, in_w]
// (any strides, in elements):
// y[oy, ox] = sum_{ky,kx} tap(ky, kx) * u[oy*down + ky - pad_y0, ox*down + kx - pad_x0], u = x
// upsampled by zero insertion. tap = gain * f flipped (convolution) unless flip_filter.
struct FirLaunch {
  const void* x;
  void* y;
  const float* filter;  // [filter_h, filter_w] float32 on the device
  int64_t batch, channels, in_h, in_w;
  int64_t stride_n, stride_c, stride_y, stride_x;
  int64_t out_h, out_w;
  int filter_h, filter_w;
  int up, down, pad_x0, pad_y0;
  bool flip_filter;
  bool channels_last;  // y's layout: threads then run over the channels of a pixel, as x's reads do
  float gain;
};
// The kernel that runs a launch (kernel.h): where the tiled kernel is built for it (with_fixed_fir),
// under Auto and ChannelLanes in 16-byte lanes of channels where the launch allows
// (fir_runs_in_lanes, fir_lanes_elements.h), else without lanes (Tiled); elsewhere, and under
// PerElement, the generic one.
void launch_upfirdn2d(const FirLaunch& job, ElementType type, void* stream, Kernel kernel = Kernel::Auto);

// y = clamp(act(x + b[c]) * gain) over the memory of x and y seen as [outer, channels, inner]
// (../channel_layout.h);
// b: [channels] of the same type, or null.
// allow_lanes: 16 bytes per thread where the memory is whole aligned packs (runs_in_lanes), else one
// element per thread; false: always one element per thread (the op benchmark, the tests).
void launch_bias_act(const void* x, const void* b, void* y, int64_t numel, int64_t channels, int64_t inner,
                     const ActivationParams& a, ElementType type, void* stream, bool allow_lanes = true);

// dx = dy * slope(y): the gradient of bias_act through its output (numel each, all in one layout).
void launch_bias_act_grad(const void* dy, const void* y, void* dx, int64_t numel, const ActivationParams& a,
                          ElementType type, void* stream, bool allow_lanes = true);

// The synthesis layers' epilogue (sg2/ops/conv_epilogue.h) on an EpilogueLaunch (../bias_act_elements.h).
// Both run 16 bytes per thread and take only launches that epilogue_runs_in_lanes accepts (the op
// composes bias_act and ATen's ops for the others). The gradient runs a warp per run of an NCHW
// plane, or a block per run of a channels_last sample's pixels (epilogue_elements.h).
void launch_conv_epilogue(const EpilogueLaunch& job, const ActivationParams& a, ElementType type, void* stream);
void launch_conv_epilogue_grad(const EpilogueLaunch& job, const ActivationParams& a, ElementType type, void* stream);

// Whether GPU `device` loads this file's kernels: cudaFuncGetAttributes of a kernel compiled with
// them ("" where it does, else the CUDA error's text: no image for its architecture, a PTX the
// driver cannot compile). Leaves the current device as it was.
std::string kernel_image_error(int device);

}  // namespace sg2::ops::cuda
