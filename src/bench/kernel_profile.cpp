#include "sg2/bench/kernel_profile.h"

#include "sg2/core/error.h"

#include <torch/csrc/autograd/profiler_kineto.h>
#if __has_include(<kineto/ActivityType.h>)  // LibTorch 2.x ships libkineto's header: check the values below
#include <kineto/ActivityType.h>
static_assert(static_cast<int>(libkineto::ActivityType::GPU_MEMCPY) == 3 &&
              static_cast<int>(libkineto::ActivityType::GPU_MEMSET) == 4 &&
              static_cast<int>(libkineto::ActivityType::CONCURRENT_KERNEL) == 5);
#endif

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

namespace sg2::bench {

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

template <class Event>
ProfiledEvent profiled_event(const Event& e, bool device_work) {
  ProfiledEvent out;
  out.name = e.name();
  out.correlation_id = e.correlationId();
  out.linked_correlation_id = e.linkedCorrelationId();
  if (!device_work && e.hasShapes()) {
    for (const auto& shape : e.shapes()) out.shapes.push_back(shape);
  }
  out.duration_ns = duration_ns(e, 0);
  out.device_work = device_work;
  return out;
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

bool is_matrix_kernel(const std::string& name) {
  // Layout changes and split-K reductions come with the engines' names but move memory only.
  for (const char* data_movement : {"nchwToNhwc", "nhwcToNchw", "convertTensor", "splitKreduce", "gemv"}) {
    if (name.find(data_movement) != std::string::npos) return false;
  }
  // cuDNN's tensor-core and FFMA engines (sm80_xmma_..., sm90_xmma_..., cudnn::detail::dgrad_engine,
  // implicit_convolve_sgemm, winograd, fft), cuBLAS's GEMMs (..gemm.., and nvjet_sm90_... in CUDA
  // 12.6 and later) and CUTLASS's.
  for (const char* engine : {"xmma", "gemm", "nvjet", "cutlass", "cudnn::detail::", "convolve", "winograd", "fft"}) {
    if (name.find(engine) != std::string::npos) return true;
  }
  return false;
}

KernelKinds split_by_kind(const std::map<std::string, double>& seconds) {
  KernelKinds kinds;
  for (const auto& [name, s] : seconds) {
    if (is_matrix_kernel(name)) {
      kinds.matrix_seconds += s;
    } else {
      kinds.other_seconds += s;
      kinds.other[name] += s;
    }
  }
  return kinds;
}

namespace {

// "32x128x64x64 128x128x3x3": the tensors among an op's inputs (other arguments have no shape).
std::string format_shapes(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out;
  for (const auto& shape : shapes) {
    if (shape.empty()) continue;
    out += out.empty() ? "" : " ";
    out += fmt::format("{}", fmt::join(shape, "x"));
  }
  return out;
}

}  // namespace

std::map<std::string, double> time_by_launching_op(const std::vector<ProfiledEvent>& events) {
  std::map<uint64_t, std::string> host_ops;  // correlation id -> "op shapes"
  for (const auto& e : events) {
    if (e.device_work || e.linked_correlation_id != 0) continue;
    const std::string shapes = format_shapes(e.shapes);
    host_ops[e.correlation_id] = shapes.empty() ? e.name : e.name + " " + shapes;
  }
  std::map<std::string, double> seconds;
  for (const auto& e : events) {
    if (!e.device_work) continue;
    const auto op = host_ops.find(e.linked_correlation_id);
    seconds[e.name + " <- " + (op == host_ops.end() ? std::string("(no host op)") : op->second)] +=
        static_cast<double>(e.duration_ns) * 1e-9;
  }
  return seconds;
}

KernelProfile::KernelProfile(const at::Device& device, bool with_shapes)
    : cuda_(device.is_cuda()), with_shapes_(with_shapes) {
  SG2_CHECK(!torch::profiler::impl::profilerEnabled(), "a LibTorch profiler is already recording in this thread");
  const ProfilerConfig config(ProfilerState::KINETO, /*report_input_shapes=*/with_shapes);
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
  std::vector<ProfiledEvent> linked;  // CUDA with shapes: every event, for the attribution
  for (const auto& event : result->events()) {
    const bool device_work =
        cuda_ && event.deviceType() == c10::DeviceType::CUDA && is_device_work(event.activityType());
    if (cuda_ && with_shapes_) linked.push_back(profiled_event(event, device_work));
    if (event.deviceType() != wanted || (cuda_ && !device_work)) continue;
    events.emplace_back(event.name(), duration_ns(event, 0));
  }
  DeviceTimes times = sum_device_events(events, cuda_);
  times.seconds_by_launching_op = time_by_launching_op(linked);
  return times;
}

}  // namespace sg2::bench
