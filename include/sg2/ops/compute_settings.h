#pragma once
// How the ops compute: one value that a run builds from its config (train::compute_settings_of)
// and gives its networks (nn::set_compute), which pass it to every op they call; an op called
// without one computes as the defaults say. No op reads a process-wide setting of this project.
// LibTorch's own (threads, TF32, cuDNN's benchmark mode) the run sets once, where it starts
// (docs/architecture.md, "Compute settings").

#include "sg2/core/enum_names.h"
#include "sg2/ops/device_set.h"
#include "sg2/ops/kernel.h"

#include <ATen/core/Tensor.h>

#include <functional>

namespace sg2::ops {

inline constexpr EnumNames<Kernel, 5> kKernelNames{{{Kernel::Auto, "auto"},
                                                    {Kernel::Reference, "reference"},
                                                    {Kernel::ChannelLanes, "channel_lanes"},
                                                    {Kernel::Tiled, "tiled"},
                                                    {Kernel::PerElement, "per_element"}}};
constexpr const auto& enum_names(Kernel) { return kKernelNames; }

// Rewrites the pre-activations v = x + bias of every call with a kinked activation (ReLU, leaky
// ReLU) before the activation: the kink pinning of the parity checks (tests/support/kink_pinning.h)
// fixes the side of the elements within rounding of 0. Empty in training.
using PreActivationHook = std::function<at::Tensor(const at::Tensor& v)>;

struct ComputeSettings {
  ComputeSettings() = default;
  // The defaults with another kernel choice: an op called with a Kernel (the op benchmark, tests).
  ComputeSettings(Kernel kernel_choice) : kernel(kernel_choice) {}  // NOLINT(google-explicit-constructor)

  Kernel kernel = Kernel::Auto;  // kernel.h
  // The devices whose convolutions in conv2d_resample run through conv2d_gradfix while gradients
  // are recorded (conv_gradfix.h): CUDA, as the reference trains (run.conv2d_gradfix); All in tests.
  DeviceSet conv2d_gradfix = DeviceSet::Cuda;
  // The devices whose float32 convolutions run in three TF32 passes (tf32_split.h;
  // run.float32_convolutions 3xtf32: CUDA); All in tests.
  DeviceSet tf32_split = DeviceSet::None;
  PreActivationHook pre_activation;

  bool reference() const { return kernel == Kernel::Reference; }
};

// The settings with another kernel choice (a parity check's reference run of the same settings).
inline ComputeSettings with_kernel(ComputeSettings settings, Kernel kernel) {
  settings.kernel = kernel;
  return settings;
}

}  // namespace sg2::ops
