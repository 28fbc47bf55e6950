#pragma once
// The devices a process-wide op setting covers (conv2d_gradfix, the TF32 split): none, CUDA devices
// only (training's settings, as the reference's), or every device (tests: the CPU then runs the ops
// a GPU would).

#include <ATen/core/Tensor.h>

namespace sg2::nn::ops {

enum class DeviceSet { None, Cuda, All };

// Whether `set` covers t's device.
inline bool covers(DeviceSet set, const at::Tensor& t) {
  return set == DeviceSet::All || (set == DeviceSet::Cuda && t.is_cuda());
}

}  // namespace sg2::nn::ops
