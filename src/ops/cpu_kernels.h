#pragma once
// The raw CPU kernels (float32), the counterparts of cuda/kernels_cuda.h: upfirdn2d_cpu.cpp,
// bias_act_cpu.cpp and conv_epilogue_cpu.cpp, called by the ops' files (upfirdn2d.cpp, bias_act.cpp,
// conv_epilogue.cpp) for CPU tensors.

#include "bias_act_elements.h"
#include "sg2/ops/conv_epilogue.h"
#include "sg2/ops/upfirdn2d.h"

namespace sg2::ops::kernels::host {

// x: [N, C, H, W] float32 (planes and rows may be strided) -> [N, C, out_h, out_w], channels_last
// when x is, else contiguous.
at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p, int64_t out_h,
                             int64_t out_w);

// y = clamp(act(x + b) * gain) over x's memory as [outer, C, inner] around `dim`, in x's layout
// (channel_layout.h); b: [C] or undefined.
at::Tensor bias_act_forward(const at::Tensor& x, const at::Tensor& b, int64_t dim, const ActivationParams& a);

// dx = dy * slope(y) in y's layout, y as bias_act_forward returned it.
at::Tensor bias_act_grad(const at::Tensor& dy, const at::Tensor& y, const ActivationParams& a);

// The synthesis layers' epilogue (sg2/ops/conv_epilogue.h) on float32 tensors: x contiguous or
// channels_last, the rest contiguous; y in x's layout.
at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const ActivationParams& a);

// dx (in x's layout) and the plane sums through the forward's output y (y and dy are laid out as x).
EpilogueGradient conv_epilogue_grad(const at::Tensor& dy, const at::Tensor& y, const EpilogueTensors& t,
                                    const ActivationParams& a);

}  // namespace sg2::ops::kernels::host
