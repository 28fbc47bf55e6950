#pragma once
// Hand-written kernels for the memory-bound StyleGAN2 ops, for the CPU (upfirdn2d_cpu.cpp,
// bias_act_cpu.cpp) and CUDA (cuda/, built when LibTorch has CUDA and the toolkit is found), each
// beside its reference in ops_reference.cpp and tested against it (tests/unit/nn, tests/gpu):
//
// - upfirdn2d: zero-insertion upsampling, padding, FIR filter and decimation in one pass, no
//   temporaries; its gradient is again an upfirdn2d (flipped filter, up and down swapped), so the
//   autograd function is differentiable to any order (R1 and path length need the second).
// - bias_act: bias, activation, gain and clamp in one pass; backward uses only the output.
//
// The dispatching ops (ops.h) use them for float32 CPU tensors and for float32 / float16 / bfloat16
// CUDA tensors, unless reference ops are forced. The autograd functions are the same for both
// devices: only the raw kernels differ.

#include "sg2/nn/ops.h"

namespace sg2::nn::kernels {

// Raw forward kernels (no autograd) for a supported x: [N, C, H, W] for upfirdn2d.
at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);
at::Tensor bias_act_forward(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p);

// Differentiable versions (custom autograd functions built on the raw kernels).
at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);
at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p);

// The parameters of the adjoint of upfirdn2d with `p` for an input of size in_h x in_w.
ops::FirParams upfirdn2d_adjoint(const ops::FirParams& p, int64_t filter_h, int64_t filter_w, int64_t in_h,
                                 int64_t in_w, int64_t out_h, int64_t out_w);

// upfirdn2d's output height and width; fails naming the sizes when the filter does not fit.
std::array<int64_t, 2> upfirdn2d_output_size(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);

// Whether the kernels handle these tensors (float32 on the CPU; float32, float16 or bfloat16 on
// CUDA where the CUDA kernels are built).
bool supported(const at::Tensor& x);

// Whether this build has the CUDA kernels.
bool cuda_kernels_built();

}  // namespace sg2::nn::kernels
