#include "sg2/cli/kernel_profile.h"

#include "sg2/core/error.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#if __has_include(<kineto/ActivityType.h>)  // LibTorch 2.x ships libkineto's header: check the values below
#include <kineto/ActivityType.h>
static_assert(static_cast<int>(libkineto::ActivityType::GPU_MEMCPY) == 3 &&
              static_cast<int>(libkineto::ActivityType::GPU_MEMSET) == 4 &&
              static_cast<int>(libkineto::ActivityType::CONCURRENT_KERNEL) == 5);
#endif

#include <set>

namespace sg2::cli {

namespace {

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

// An event's duration in ns: durationNs() in LibTorch 2.x, durationUs() in 1.13.
template <class Event>
auto duration_ns(const Event& e, int) -> decltype(e.durationNs()) {
  return e.durationNs();
}
template <class Event>
uint64_t duration_ns(const Event& e, long) {
  return static_cast<uint64_t>(e.durationUs()) * 1000;
}

// libkineto's ActivityType values of what a GPU itself runs (GPU_MEMCPY, GPU_MEMSET,
// CONCURRENT_KERNEL; the same in LibTorch 1.13 and 2.x). Other device-side events, GPU user
// annotations for one, span kernels and would count their time twice.
bool is_device_work(uint8_t kineto_activity) { return kineto_activity >= 3 && kineto_activity <= 5; }

std::set<ActivityType> activities_for(bool cuda) {
  if (cuda) return {ActivityType::CPU, ActivityType::CUDA};  // CPU: the launches the kernels link to
  return {ActivityType::CPU};
}

}  // namespace

DeviceTimes sum_device_events(const std::vector<std::pair<std::string, uint64_t>>& events, bool busy) {
  DeviceTimes times;
  for (const auto& [name, ns] : events) {
    const double seconds = static_cast<double>(ns) * 1e-9;
    times.seconds[name] += seconds;
    times.launches[name] += 1;
    if (busy) times.busy_seconds += seconds;
  }
  return times;
}

KernelProfile::KernelProfile(const at::Device& device) : cuda_(device.is_cuda()) {
  SG2_CHECK(!torch::profiler::impl::profilerEnabled(), "a LibTorch profiler is already recording in this thread");
  const ProfilerConfig config(ProfilerState::KINETO);
  profiler::prepareProfiler(config, activities_for(cuda_));
  profiler::enableProfiler(config, activities_for(cuda_));
}

KernelProfile::~KernelProfile() {
  if (running_) profiler::disableProfiler();
}

DeviceTimes KernelProfile::stop() {
  SG2_CHECK(running_, "KernelProfile::stop() called twice");
  running_ = false;
  const std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  const c10::DeviceType wanted = cuda_ ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  std::vector<std::pair<std::string, uint64_t>> events;
  for (const auto& event : result->events()) {
    if (event.deviceType() != wanted || (cuda_ && !is_device_work(event.activityType()))) continue;
    events.emplace_back(event.name(), duration_ns(event, 0));
  }
  return sum_device_events(events, cuda_);
}

}  // namespace sg2::cli
