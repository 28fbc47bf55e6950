#pragma once
// Bilinear grid sampling (zeros outside, align_corners false) differentiable to any order with
// respect to its input (the reference's grid_sample_gradfix). The augmentation's geometric
// transform samples the images through it, and R1 and path length differentiate the images'
// gradient again: LibTorch's grid_sampler_2d_backward has no gradient of its own, while here the
// input gradient's gradient (for the incoming gradient) is again a grid sample. The grid takes a
// first-order gradient only (the augmentation's grids come from random draws, never from a
// network).

#include <ATen/core/Tensor.h>

namespace sg2::ops {

// input [N, C, H, W], grid [N, H', W', 2] in [-1, 1] -> [N, C, H', W']
at::Tensor grid_sample(const at::Tensor& input, const at::Tensor& grid);

}  // namespace sg2::ops
