#pragma once
// Float32 convolutions in TF32 tensor-core passes at float32's accuracy (3xTF32; run.float32_convolutions).
//
// cuDNN's float32 convolutions run on the GPU's FFMA units unless TF32 is allowed, and TF32 keeps 10
// of float32's 23 mantissa bits. The reference trains with TF32 off, so the float32 blocks (config-f:
// 4x4 to 16x16, 512 channels) took about 18 ms of a 165 ms step on an H200 in FFMA. Split each
// operand a = a_hi + a_lo, a_hi a rounded to the nearest TF32 number and a_lo the exact rest (at most
// 2^-11 of a): a bilinear f (a convolution, its input gradient, its weight gradient) is then
//   f(a, b) = f(a_hi, b_hi) + f(a_hi, b_lo) + f(a_lo, b_hi) + f(a_lo, b_lo),
// and the last term is at most 2^-22 of a product. The first three in TF32 (which may cut a_lo to
// its own 10 bits: another 2^-21 at most) carry float32's accuracy in three tensor-core passes,
// which run several times FFMA's rate on an A100 or H100 (CUTLASS's 3xTF32; docs/performance.md has
// the measurement). On a GPU without TF32 (before compute capability 8.0) the three passes run in
// float32: slower than one. Non-finite values: a NaN stays NaN, an infinity's rest is NaN.

#include "sg2/core/scoped_setting.h"
#include "sg2/ops/device_set.h"

#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <utility>

namespace sg2::ops {

// cuDNN's TF32 for convolutions (LibTorch's process-wide setting) while it lives, the setting before
// it back after. The split's passes hold one: a process runs its convolutions on one thread at a time
// (the caller's, or the autograd engine's device thread while the caller waits), so no other
// thread's convolution sees it.
class CudnnTf32Scope : public ScopedSetting<bool> {
 public:
  explicit CudnnTf32Scope(bool allow);
};

// a = hi + lo exactly: hi is a rounded to the nearest TF32 number (its 13 low mantissa bits clear,
// ties away from zero; a TF32 pass reads it unchanged), lo = a - hi (exact in float32, at most 2^-11
// of a). a: float32, finite and below float32's largest less 2^-11 of it (which would round to
// infinity).
std::pair<at::Tensor, at::Tensor> split_tf32(const at::Tensor& a);

// Why the split, on `devices`, would slow a GPU of compute `capability` (major * 10 + minor): before
// 8.0 there is no TF32, so its three passes run in float32. Empty where it would not: no split on
// CUDA, a GPU with TF32, or no GPU (0).
std::string tf32_split_warning(DeviceSet devices, int capability);

// f(a, b) for f bilinear in (a, b): split into three TF32 passes (above) where a and b are float32
// on a device that `devices` covers (ComputeSettings::tf32_split) and no gradient is being
// recorded through them (the split's bit operations have none: conv2d_gradfix's functions call
// this in their forwards), else f(a, b) as it is.
using Bilinear = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;
at::Tensor bilinear_in_tf32_passes(const at::Tensor& a, const at::Tensor& b, DeviceSet devices, const Bilinear& f);

}  // namespace sg2::ops
