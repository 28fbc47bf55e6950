#pragma once
// Convolutions whose higher-order gradients are ordinary convolutions (the reference's
// conv2d_gradfix, which stylegan2-ada-pytorch turns on for CUDA in training).
//
// R1 and the path-length penalty differentiate a convolution's input gradient again, with respect
// to its weight. LibTorch's double backward computes that weight gradient as one more convolution
// with the roles swapped: the feature map as the kernel (a 3x3 layer at 256x256 becomes a
// convolution with a 256x256 kernel and a 3x3 output) and the stride as dilation. cuDNN has no fast
// kernels for those shapes. Here the gradient of conv2d is again this convolution (for the input)
// and a weight-gradient function, whose own gradient is this convolution twice; so every order runs
// the ordinary forward, input-gradient and weight-gradient kernels. The values are the same sums.

#include "sg2/ops/compute_settings.h"

#include <ATen/ATen.h>

#include <array>
#include <cstdint>

namespace sg2::ops {

// y = conv2d(x, w) (transpose false) or conv_transpose2d(x, w) with these strides, paddings, output
// paddings (transposed only) and groups; no bias, no dilation. layout is the memory format of
// every feature map of the convolution and of its gradients to any order (the network's: x's in
// the forward), so that a channels_last network's element-wise ops meet no NCHW gradient: the
// gradients of ToRGB's 3 (or 1) channels, or a 1-channel input, would otherwise decide it.
struct ConvGeometry {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, output_padding{0, 0};
  int64_t groups = 1;
  bool transpose = false;
  at::MemoryFormat layout = at::MemoryFormat::Contiguous;  // or ChannelsLast
  DeviceSet tf32_split = DeviceSet::None;  // where every order's float32 passes run split (tf32_split.h)
};

// y as conv_geometry describes, differentiable to any order through conv2d_gradfix itself.
at::Tensor conv2d_gradfix(const at::Tensor& x, const at::Tensor& w, const ConvGeometry& geometry);

// dw of y = conv(x, w) for dy, as conv2d_gradfix's backward computes it (its weight-gradient
// function's forward: the backend's weight-gradient kernel), for a weight of w_sizes.
at::Tensor conv2d_weight_gradient(const at::Tensor& dy, const at::Tensor& x, const ConvGeometry& geometry,
                                  at::IntArrayRef w_sizes);

// The geometry of the convolution that maps dy (of y = conv(x, w)) back to dx: the transposed
// convolution of a convolution and vice versa, with the output padding that restores x's size.
ConvGeometry input_gradient_geometry(const ConvGeometry& g, at::IntArrayRef x_sizes, at::IntArrayRef y_sizes,
                                     at::IntArrayRef w_sizes);

// Whether conv2d_resample's convolution of x and w runs through conv2d_gradfix: the fast ops
// (compute.kernel not Reference) on a device that compute.conv2d_gradfix covers, while gradients are
// recorded through x or w. CUDA by default, as the reference trains; every device in tests (the CPU
// then runs the GPU's ops, slowly, since LibTorch's CPU conv_transpose2d, which computes every input
// gradient here, is several times its direct input gradient).
bool uses_conv2d_gradfix(const at::Tensor& x, const at::Tensor& w, const ComputeSettings& compute);

}  // namespace sg2::ops
