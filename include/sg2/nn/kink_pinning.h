#pragma once
// Kink pinning, for parity checks of the fast kernels or of another device against the reference.
//
// ReLU and leaky ReLU are not differentiable at 0: a pre-activation within float32 rounding of 0
// takes one slope or the other depending on the summation order of the ops before it (the
// reference's, the fast kernels', another CPU's). The gradient then differs by (1 - alpha) times
// that element's contribution, which in a cancelling sum (noise strengths, biases at 4x4) is far
// above the rounding of everything else: parity_tiny has one such element at b32.conv0 (6e-8, on
// the other side in the fast kernels on AVX2); parity_orig_conditional_rgb has one at b16.conv1
// (+4.1e-8 exactly, -1.0e-7 in float32 on the CPU, +ve on CUDA). Neither side is wrong.
//
// So a parity check of the fast kernels, or of the GPU, records the side of every pre-activation in
// a run of the reference ops on the CPU (Record) and replays it in the checked run, on any device
// (Replay): elements whose magnitude is within
// `band` (relative to the call's largest) take the recorded side, straight-through (the value moves
// by at most 2 * band * max, the gradient is the identity). Everything else is computed as usual.
// Off (the default) costs one atomic load per bias_act call.

#include <ATen/ATen.h>

#include <cstdint>

namespace sg2::nn::ops {

enum class KinkPinning { Off, Record, Replay };

// Starts a mode; Record clears what was recorded, Replay starts from the first recorded call.
void set_kink_pinning(KinkPinning mode, double band = 1e-6);
KinkPinning kink_pinning();

// Pre-activations v (x + bias) of one bias_act call with a kinked activation: records their sides
// (Record), or pins the near-zero ones to the recorded sides (Replay). Returns v (or its pinned form).
at::Tensor pin_kinks(const at::Tensor& v);

// Elements whose side replay changed so far (the ties the kernels resolved the other way).
int64_t pinned_kink_count();

}  // namespace sg2::nn::ops
