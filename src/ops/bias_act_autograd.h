#pragma once
// What bias_act.cpp's autograd functions share with the other ops built on bias_act's arithmetic
// (conv_epilogue.cpp).

#include "bias_act_elements.h"
#include "sg2/ops/bias_act.h"

#include <ATen/core/ivalue.h>

#include <optional>
#include <utility>
#include <vector>

namespace sg2::ops::kernels {

// The parameters with the activation's default alpha and gain filled in.
ActivationParams resolve(const ops::BiasActParams& p);

// The output is needed in backward unless the slope is constant (linear, no clamp).
bool needs_output(const ActivationParams& a);

// The activation as the autograd functions keep it (saved_data holds IValues).
std::vector<double> to_saved(const ActivationParams& a);
ActivationParams from_saved(const c10::IValue& saved);

// LibTorch 1.13's custom functions take no undefined tensors: an empty placeholder stands in.
at::Tensor or_placeholder(const at::Tensor& t, const at::Tensor& like);

// dx = dy * slope(y) through bias_act's gradient function, itself differentiable (to any order).
at::Tensor differentiable_bias_act_gradient(const at::Tensor& dy, const at::Tensor& y, const ActivationParams& a);

// dx = dy * slope(y) and, for a bias on dim 1 of a 4-D y, dx's sums over every other dimension
// (float32, [C]) in one pass: the synthesis layers' epilogue gradient kernel (conv_epilogue.cpp)
// with demodulation 1 and no noise, which also sums each channel's pre-activation gradient in
// float32 as it goes, where its kernels take y (NCHW or channels_last; float32 on the CPU, whole
// aligned 16-byte packs on a GPU); else nullopt. Not differentiable: for a backward that autograd
// does not record.
std::optional<std::pair<at::Tensor, at::Tensor>> bias_act_gradient_with_bias_sums(const at::Tensor& dy,
                                                                                   const at::Tensor& y, int64_t dim,
                                                                                   const ActivationParams& a);

}  // namespace sg2::ops::kernels
