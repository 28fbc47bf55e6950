// cuda_device.h, for every build: the CUDA runtime's part when the CUDA toolkit is found
// (SG2_CUDA_RUNTIME), LibTorch's part when LibTorch has CUDA (SG2_TORCH_CUDA).
#include "sg2/device/cuda_device.h"

#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <algorithm>
#include <cstring>

#if SG2_CUDA_RUNTIME
#include <cuda_runtime_api.h>
#endif
#if SG2_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace sg2 {

#if SG2_CUDA_RUNTIME

CudaRuntimeInfo query_cuda_runtime() {
  CudaRuntimeInfo info;
  info.compiled = true;
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    info.error = cudaGetErrorString(status);
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return info;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) info.devices.emplace_back(prop.name);
  }
  return info;
}

int cuda_compute_capability(int index) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index) != cudaSuccess) {
    cudaGetLastError();  // no such device: clear the error so later calls start clean
    return 0;
  }
  return major * 10 + minor;
}

void select_cuda_device(int index) {
  const cudaError_t status = cudaSetDevice(index);
  SG2_CHECK(status == cudaSuccess, "cudaSetDevice({}) failed: {}", index, cudaGetErrorString(status));
}

#else

CudaRuntimeInfo query_cuda_runtime() {
  CudaRuntimeInfo info;
  info.error = "built without the CUDA toolkit (SG2_WITH_CUDA=OFF)";
  return info;
}

int cuda_compute_capability(int /*index*/) { return 0; }

void select_cuda_device(int index) {
  SG2_FAIL("cannot select CUDA device {}: built without the CUDA toolkit (SG2_WITH_CUDA=OFF)", index);
}

#endif

#if SG2_TORCH_CUDA

namespace {
constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;
// Index of the all-pools statistic: StatType::AGGREGATE, declared in c10::cuda::CUDACachingAllocator
// by LibTorch 1.x and in c10 by 2.x; 0 in both.
constexpr size_t kAggregateStat = 0;

// The index of a CUDA device ("cuda" alone: the current one).
c10::DeviceIndex cuda_index(const at::Device& device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}

// The same, with LibTorch's CUDA state set up: the caching allocator's statistics throw ("did you
// call init?") until the process's first CUDA tensor, and a process may ask for them before it has
// one (train.batch_gpu auto, the bench).
c10::DeviceIndex initialized_cuda_index(const at::Device& device) {
  const c10::DeviceIndex index = cuda_index(device);
  at::empty({0}, at::TensorOptions().device(at::kCUDA, index));  // LibTorch's lazy CUDA initialisation
  return index;
}

}  // namespace

void* current_cuda_stream(const at::Device& device) {
  return c10::cuda::getCurrentCUDAStream(cuda_index(device)).stream();  // per collective: no allocation
}

double device_peak_memory_gib(const at::Device& device) {
  if (!device.is_cuda()) return 0.0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(initialized_cuda_index(device));
  return static_cast<double>(stats.allocated_bytes[kAggregateStat].peak) / kBytesPerGib;
}

void reset_device_peak_memory(const at::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(initialized_cuda_index(device));
}

double device_allocated_memory_gib(const at::Device& device) {
  if (!device.is_cuda()) return 0.0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(initialized_cuda_index(device));
  return static_cast<double>(stats.allocated_bytes[kAggregateStat].current) / kBytesPerGib;
}

double device_total_memory_gib(const at::Device& device) {
  if (!device.is_cuda()) return 0.0;
  return static_cast<double>(at::cuda::getDeviceProperties(initialized_cuda_index(device))->totalGlobalMem) /
         kBytesPerGib;
}

double device_memory_outside_allocator_gib(const at::Device& device) {
#if SG2_CUDA_RUNTIME
  if (!device.is_cuda()) return 0.0;
  const c10::DeviceIndex index = initialized_cuda_index(device);
  const c10::cuda::CUDAGuard on_device(index);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  const cudaError_t status = cudaMemGetInfo(&free_bytes, &total_bytes);
  SG2_CHECK(status == cudaSuccess, "cudaMemGetInfo on {} failed: {}", device.str(), cudaGetErrorString(status));
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
  const auto in_use = static_cast<double>(total_bytes - free_bytes);
  return std::max(0.0, in_use - static_cast<double>(stats.reserved_bytes[kAggregateStat].current)) / kBytesPerGib;
#else
  (void)device;
  return 0.0;
#endif
}

void release_cached_device_memory(const at::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
}

namespace {

c10::cuda::SyncDebugMode sync_debug_mode(HostSyncCheck check) {
  switch (check) {
    case HostSyncCheck::Off: return c10::cuda::SyncDebugMode::L_DISABLED;
    case HostSyncCheck::Warn: return c10::cuda::SyncDebugMode::L_WARN;
    case HostSyncCheck::Error: return c10::cuda::SyncDebugMode::L_ERROR;
  }
  return c10::cuda::SyncDebugMode::L_DISABLED;
}

void set_host_sync_check(HostSyncCheck check) {
  c10::cuda::warning_state().set_sync_debug_mode(sync_debug_mode(check));
}

}  // namespace

bool host_sync_check_available() { return true; }

HostSyncCheck current_host_sync_check() {
  switch (c10::cuda::warning_state().get_sync_debug_mode()) {
    case c10::cuda::SyncDebugMode::L_WARN: return HostSyncCheck::Warn;
    case c10::cuda::SyncDebugMode::L_ERROR: return HostSyncCheck::Error;
    default: return HostSyncCheck::Off;
  }
}

#else

void* current_cuda_stream(const at::Device& device) {
  SG2_FAIL("device {}: this LibTorch was built without CUDA, so there is no CUDA stream to run on", device.str());
}

double device_peak_memory_gib(const at::Device&) { return 0.0; }
void reset_device_peak_memory(const at::Device&) {}
double device_allocated_memory_gib(const at::Device&) { return 0.0; }
double device_total_memory_gib(const at::Device&) { return 0.0; }
double device_memory_outside_allocator_gib(const at::Device&) { return 0.0; }
void release_cached_device_memory(const at::Device&) {}

namespace {
void set_host_sync_check(HostSyncCheck) {}
}  // namespace

bool host_sync_check_available() { return false; }
HostSyncCheck current_host_sync_check() { return HostSyncCheck::Off; }

#endif

HostSyncCheck parse_host_sync_check(const std::string& name) {
  return parse_enum(kHostSyncCheckNames, name, "host synchronisation check");
}
std::string to_string(HostSyncCheck check) { return enum_name(kHostSyncCheckNames, check); }

HostSyncScope::HostSyncScope(HostSyncCheck check) {
  if (check == HostSyncCheck::Off || !host_sync_check_available()) return;
  previous_ = current_host_sync_check();
  active_ = true;
  set_host_sync_check(std::max(check, previous_));
}

HostSyncScope::~HostSyncScope() {
  if (active_) set_host_sync_check(previous_);
}

HostSyncAllowed::HostSyncAllowed() : previous_(current_host_sync_check()) { set_host_sync_check(HostSyncCheck::Off); }

HostSyncAllowed::~HostSyncAllowed() { set_host_sync_check(previous_); }

namespace {

// LibTorch's message (c10::cuda::warn_or_error_on_sync) as warning and as error, the same in 1.x and 2.x.
constexpr const char* kHostSyncMessage = "called a synchronizing CUDA operation";

bool is_host_sync_message(const std::string& message) { return message.find(kHostSyncMessage) != std::string::npos; }

// Counts LibTorch's host synchronisation warnings raised on this thread while it is installed (the
// autograd engine replays its device threads' warnings on the thread that ran backward) and passes
// every other warning on to the handler before it. LibTorch 2.x hands a handler a c10::Warning,
// 1.13 its parts.
class HostSyncWarningCounter : public c10::WarningHandler {
 public:
  HostSyncWarningCounter() : previous_(current_handler()) { install(this); }
  ~HostSyncWarningCounter() override { install(previous_); }
  HostSyncWarningCounter(const HostSyncWarningCounter&) = delete;
  HostSyncWarningCounter& operator=(const HostSyncWarningCounter&) = delete;

  int64_t count() const { return count_; }

#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning& warning) override {
    if (is_host_sync_message(warning.msg())) return void(++count_);
    previous_->process(warning);
  }

 private:
  static c10::WarningHandler* current_handler() { return c10::WarningUtils::get_warning_handler(); }
  static void install(c10::WarningHandler* handler) { c10::WarningUtils::set_warning_handler(handler); }
#else
  void process(const c10::SourceLocation& where, const std::string& message, const bool verbatim) override {
    if (is_host_sync_message(message)) return void(++count_);
    previous_->process(where, message, verbatim);
  }

 private:
  static c10::WarningHandler* current_handler() { return c10::Warning::get_warning_handler(); }
  static void install(c10::WarningHandler* handler) { c10::Warning::set_warning_handler(handler); }
#endif

  c10::WarningHandler* previous_;
  int64_t count_ = 0;
};

constexpr const char* kHostSyncCauses = "an op such as .item(), a blocking copy between host and device, nonzero or "
                                        "a synchronize";

void warn_of_host_syncs(const std::string& what, const at::Device& device, int64_t calls, const std::string& note) {
  spdlog::warn("{} made the host wait for {} {} time{} (run.host_sync_check = warn): {}; run.host_sync_check = "
               "error stops at the first, and TORCH_SHOW_CPP_STACKTRACES=1 adds its stack{}",
               what, device.str(), calls, calls == 1 ? "" : "s", kHostSyncCauses, note);
}

bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

std::optional<std::string> HostSyncWaitLog::count(const std::string& what) {
  const int64_t time = ++times_[what];
  if (!is_power_of_two(time)) return std::nullopt;
  if (time == 1) return std::string();
  return fmt::format(" (time {} this part waited; logged at times 1, 2, 4, 8, ...)", time);
}

bool is_host_sync_error(const std::exception& e) { return std::strstr(e.what(), kHostSyncMessage) != nullptr; }

void run_checked_for_host_sync(HostSyncCheck check, const std::string& what, const at::Device& device,
                               HostSyncWaitLog& waits, const std::function<void()>& part) {
  const HostSyncScope scope(check);
  try {
    if (check != HostSyncCheck::Warn) return part();
    const HostSyncWarningCounter warnings;
    part();
    if (warnings.count() == 0) return;
    if (const auto note = waits.count(what)) warn_of_host_syncs(what, device, warnings.count(), *note);
  } catch (const std::exception& e) {
    if (!is_host_sync_error(e)) throw;
    const std::string detail = e.what();
    const size_t stack = detail.find('\n');
    SG2_FAIL("{} made the host wait for {} (run.host_sync_check = error): {}; TORCH_SHOW_CPP_STACKTRACES=1 shows "
             "its stack{}",
             what, device.str(), kHostSyncCauses, stack == std::string::npos ? "" : detail.substr(stack));
  }
}

}  // namespace sg2
