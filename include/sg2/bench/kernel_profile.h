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

namespace sg2::bench {

struct DeviceTimes {
  std::map<std::string, double> seconds;  // per event name, summed over its launches
  std::map<std::string, int64_t> launches;
  double busy_seconds = 0;  // the sum over every name; CUDA only (kernels of one stream do not overlap)
  // "kernel <- op shapes": each kernel's time by the host op that launched it, with that op's input
  // shapes (CUDA, a profile that records shapes); which convolution runs in which cuDNN kernel.
  std::map<std::string, double> seconds_by_launching_op;
};

// Sums (name, duration in ns) events by name; `busy` also forms their total.
DeviceTimes sum_device_events(const std::vector<std::pair<std::string, uint64_t>>& events, bool busy);

// One event of a Kineto profile, as far as the attribution needs it.
struct ProfiledEvent {
  std::string name;
  uint64_t correlation_id = 0;         // a host op's
  uint64_t linked_correlation_id = 0;  // on device work: the host op that launched it (0: none)
  std::vector<std::vector<int64_t>> shapes;  // a host op's input shapes (empty where not recorded)
  uint64_t duration_ns = 0;
  bool device_work = false;  // a kernel, copy or memset that the device ran
};

// Device work's time by "kernel <- launching op and its tensor shapes" (e.g. "sm90_xmma... <-
// aten::cudnn_convolution 32x128x64x64 128x128x3x3"); work whose op is not among the events counts
// under "(no host op)".
std::map<std::string, double> time_by_launching_op(const std::vector<ProfiledEvent>& events);

// A GPU's kernels in two kinds: convolutions and matrix products (cuDNN's, cuBLAS's and CUTLASS's
// engines: bound by arithmetic) and the rest (element-wise, reductions, FIR, layout changes, copies:
// bound by memory or by latency). On a GPU of the same arithmetic with less memory bandwidth (an
// H100 SXM against an H200) it is mostly the rest that takes longer, by up to the bandwidths' ratio
// (scripts/bench/comparison_summary.sh's estimate).
bool is_matrix_kernel(const std::string& name);

struct KernelKinds {
  double matrix_seconds = 0;
  double other_seconds = 0;
  std::map<std::string, double> other;  // the rest, by name
};

KernelKinds split_by_kind(const std::map<std::string, double>& seconds);

class KernelProfile {
 public:
  // Starts recording what `device` runs; with_shapes also records host ops' input shapes (more host
  // time per op: for tables, not for timing the run).
  explicit KernelProfile(const at::Device& device, bool with_shapes = false);
  ~KernelProfile();                                   // stops if stop() was not called
  KernelProfile(const KernelProfile&) = delete;
  KernelProfile& operator=(const KernelProfile&) = delete;
  DeviceTimes stop();  // once; the caller synchronizes the device before

 private:
  bool cuda_;
  bool with_shapes_;
  bool running_ = true;
};

}  // namespace sg2::bench
