#pragma once
// The devices a compute setting covers (ComputeSettings' conv2d_gradfix and TF32 split): none, CUDA
// devices only (training's settings, as the reference's), or every device (tests: the CPU then runs
// the ops a GPU would).

#include <ATen/core/Tensor.h>

namespace sg2::ops {

enum class DeviceSet { None, Cuda, All };

// Whether `set` covers t's device.
inline bool covers(DeviceSet set, const at::Tensor& t) {
  return set == DeviceSet::All || (set == DeviceSet::Cuda && t.is_cuda());
}

}  // namespace sg2::ops
