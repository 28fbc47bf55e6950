#pragma once
// Which of upfirdn2d's kernels in 16-byte lanes runs a launch of a given shape: the staged one
// (fir_staged_elements.h) or the unstaged one (fir_lanes_elements.h). Each is faster somewhere,
// and where depends on the GPU (its memory against its shared memory and occupancy), so the first
// launch of each shape times both and every later one takes the faster, as cuDNN's benchmark mode
// does for its convolution algorithms. Plain C++: the launcher (fir_bias_act_kernels.cu) gives it
// the timings; tests give it their own.

#include "fir_bias_act_kernels.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

namespace sg2::nn::cuda {

// What a launch's speed depends on: the device, the storage type, the sizes, the strides, the
// filter's size, the resampling and the padding. Not its pointers, gain or filter taps.
using FirShapeKey = std::array<int64_t, 18>;

inline FirShapeKey fir_shape_key(const FirLaunch& job, ElementType type, int device) {
  return {device,       static_cast<int64_t>(type), job.batch,    job.channels, job.in_h,     job.in_w,
          job.stride_n, job.stride_c,               job.stride_y, job.stride_x, job.out_h,    job.out_w,
          job.filter_h, job.filter_w,               job.up,       job.down,     job.pad_x0,   job.pad_y0};
}

// The kernels that a shape's first launch times, the staged one first: it is kept on a tie.
constexpr std::array<FirKernel, 2> kTimedFirKernels{FirKernel::Staged, FirKernel::Lanes};

// Per shape, the faster of kTimedFirKernels. `time` gives a kernel's milliseconds per launch; a
// value that is not positive and finite (the kernel cannot take the launch) leaves it out, and the
// staged kernel runs when no timing is usable. A shape is timed once, under a lock (launches from
// autograd's thread and the caller's do not time each other); a `time` that throws leaves it
// untimed.
class FirKernelChoices {
 public:
  FirKernel choose(const FirShapeKey& key, const std::function<double(FirKernel)>& time) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (const auto found = choices_.find(key); found != choices_.end()) return found->second;
    FirKernel best = kTimedFirKernels.front();
    double best_ms = INFINITY;
    for (const FirKernel kernel : kTimedFirKernels) {
      const double ms = time(kernel);
      if (std::isfinite(ms) && ms > 0 && ms < best_ms) {
        best = kernel;
        best_ms = ms;
      }
    }
    choices_.emplace(key, best);
    return best;
  }

  // The kernel chosen for key, if its shape was timed.
  std::optional<FirKernel> chosen(const FirShapeKey& key) const {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto found = choices_.find(key);
    return found == choices_.end() ? std::nullopt : std::optional<FirKernel>(found->second);
  }

  // How many timed shapes chose each kernel.
  std::map<FirKernel, int> counts() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::map<FirKernel, int> counts;
    for (const auto& [key, kernel] : choices_) ++counts[kernel];
    return counts;
  }

 private:
  mutable std::mutex mutex_;
  std::map<FirShapeKey, FirKernel> choices_;
};

}  // namespace sg2::nn::cuda
