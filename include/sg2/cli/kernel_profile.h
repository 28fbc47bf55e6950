#pragma once
// Where a GPU's time goes: LibTorch's Kineto profiler records what the device runs while a
// KernelProfile lives. On CUDA that is every kernel, copy and memset the GPU ran, by name, in GPU
// time; their sum against the wall time says how much of a step the GPU idles waiting for the host
// (the fixed per-step cost of launches). OpProfile's host clocks cannot see this: CUDA calls return
// before their kernels run. On the CPU the events are LibTorch's ops, nested ones included (their
// times overlap, so no busy total is formed).

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sg2::cli {

struct DeviceTimes {
  std::map<std::string, double> seconds;  // per event name, summed over its launches
  std::map<std::string, int64_t> launches;
  double busy_seconds = 0;  // the sum over every name; CUDA only (kernels of one stream do not overlap)
};

// Sums (name, duration in ns) events by name; `busy` also forms their total.
DeviceTimes sum_device_events(const std::vector<std::pair<std::string, uint64_t>>& events, bool busy);

class KernelProfile {
 public:
  explicit KernelProfile(const at::Device& device);  // starts recording what `device` runs
  ~KernelProfile();                                   // stops if stop() was not called
  KernelProfile(const KernelProfile&) = delete;
  KernelProfile& operator=(const KernelProfile&) = delete;
  DeviceTimes stop();  // once; the caller synchronizes the device before

 private:
  bool cuda_;
  bool running_ = true;
};

}  // namespace sg2::cli
