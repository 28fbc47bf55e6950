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
// a run of the reference ops on the CPU (a KinkPins' recorder as the networks' pre-activation hook,
// sg2/ops/compute_settings.h) and replays it in the checked run, on any device (its replayer):
// elements whose magnitude is within `band` (relative to the call's largest) take the recorded
// side, straight-through (the value moves by at most 2 * band * max, the gradient is the
// identity). Everything else is computed as usual. A test aid: training sets no hook.

#include "sg2/ops/compute_settings.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>

namespace sg2::test {

class KinkPins {
 public:
  KinkPins();

  // A hook that records the sides of every call's pre-activations (clearing what was recorded).
  ops::PreActivationHook recorder();

  // A hook that pins the near-zero pre-activations of each call to the sides recorded for the call
  // of the same rank, from the first recorded call on; a call beyond them, or of another shape, is
  // an error.
  ops::PreActivationHook replayer(double band = 1e-6);

  // Elements whose side replay changed so far (the ties the kernels resolved the other way).
  int64_t pinned_count() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace sg2::test
