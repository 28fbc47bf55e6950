#pragma once
// Hand-written CPU kernels for the memory-bound StyleGAN2 ops, each beside its reference in
// ops_reference.cpp and tested against it (tests/unit/nn):
//
// - upfirdn2d: zero-insertion upsampling, padding, FIR filter and decimation in one pass, no
//   temporaries; its gradient is again an upfirdn2d (flipped filter, up and down swapped), so the
//   autograd function is differentiable to any order (R1 and path length need the second).
// - bias_act: bias, activation, gain and clamp in one pass; backward uses only the output.
//
// The dispatching ops (ops.h) use them for float32 CPU tensors unless reference ops are forced.

#include "sg2/nn/ops.h"

namespace sg2::nn::kernels {

// Raw forward kernels (no autograd): x [N, C, H, W] float32 CPU contiguous.
at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);
at::Tensor bias_act_forward(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p);

// Differentiable versions (custom autograd functions built on the raw kernels).
at::Tensor upfirdn2d(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p);
at::Tensor bias_act(const at::Tensor& x, const at::Tensor& b, const ops::BiasActParams& p);

// The parameters of the adjoint of upfirdn2d with `p` for an input of size in_h x in_w.
ops::FirParams upfirdn2d_adjoint(const ops::FirParams& p, int64_t filter_h, int64_t filter_w, int64_t in_h,
                                 int64_t in_w, int64_t out_h, int64_t out_w);

// Whether the kernels handle these tensors (float32 on the CPU).
bool supported(const at::Tensor& x);

}  // namespace sg2::nn::kernels
