#pragma once
// Everything the project asks of CUDA outside the kernels, in one place: the runtime's devices (CUDA
// toolkit), LibTorch's current stream and caching allocator (CUDA LibTorch). A build without one of
// them answers honestly instead: no devices and the reason, zero memory, or an error naming what is
// missing (src/device/cuda_device.cpp).

#include "sg2/core/enum_names.h"
#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sg2 {

// CUDA runtime as seen by this build (compiled against the CUDA toolkit or not).
struct CudaRuntimeInfo {
  bool compiled = false;        // built with SG2_WITH_CUDA
  int runtime_version = 0;      // e.g. 12040
  int driver_version = 0;       // 0 when no driver is installed
  std::vector<std::string> devices;
  std::string error;            // why no device is usable, if none is
};
CudaRuntimeInfo query_cuda_runtime();

// CUDA device `index`'s compute capability as major * 10 + minor (80 for an A100, 90 for an H100), or
// 0 where this build or machine has no such device.
int cuda_compute_capability(int index);

// Makes `index` the calling thread's current CUDA device (cudaSetDevice); errors name the device.
void select_cuda_device(int index);

// The stream LibTorch runs its kernels on for `device` (a cudaStream_t); throws without a CUDA
// LibTorch.
void* current_cuda_stream(const at::Device& device);

// Peak memory LibTorch's allocator held on `device` since the last reset (0 for the CPU, whose peak
// is the process RSS, and without a CUDA LibTorch).
double device_peak_memory_gib(const at::Device& device);
void reset_device_peak_memory(const at::Device& device);
// Memory LibTorch's allocator holds for live tensors on `device` now (0 for the CPU).
double device_allocated_memory_gib(const at::Device& device);
// The device's whole memory (0 for the CPU).
double device_total_memory_gib(const at::Device& device);
// The device's memory in use now that LibTorch's allocator does not hold: the CUDA context, NCCL's
// buffers, other processes on the same GPU (0 for the CPU, and without the CUDA runtime).
double device_memory_outside_allocator_gib(const at::Device& device);
// Hands the caching allocator's free blocks back to the device (after a probe that filled it).
void release_cached_device_memory(const at::Device& device);

// run.host_sync_check: LibTorch's check for ops that make the host wait for a CUDA device (its sync
// debug mode; torch.cuda.set_sync_debug_mode in Python): .item(), blocking copies between host and
// device, nonzero, stream and device synchronisation. Off; Warn: LibTorch warns at every such call;
// Error: the call throws (is_host_sync_error). Raw CUDA runtime calls are not seen.
enum class HostSyncCheck { Off, Warn, Error };
inline constexpr EnumNames<HostSyncCheck, 3> kHostSyncCheckNames{
    {{HostSyncCheck::Off, "off"}, {HostSyncCheck::Warn, "warn"}, {HostSyncCheck::Error, "error"}}};
constexpr const auto& enum_names(HostSyncCheck) { return kHostSyncCheckNames; }  // config fields by name
HostSyncCheck parse_host_sync_check(const std::string& name);  // off, warn, error
std::string to_string(HostSyncCheck check);

// Whether this build can check: LibTorch has CUDA (without it no op can wait for a CUDA device).
bool host_sync_check_available();
// The check in force now (Off where it is not available).
HostSyncCheck current_host_sync_check();

// Sets the check for its lifetime and then restores the one before. LibTorch's setting is
// process-wide, so it covers the autograd engine's device threads too; scopes are opened by one
// thread (the training thread), innermost closed first. Does nothing where the check is not
// available, or for Off (a scope inside an Error scope does not lift it: HostSyncAllowed does).
class HostSyncScope {
 public:
  explicit HostSyncScope(HostSyncCheck check);
  ~HostSyncScope();
  HostSyncScope(const HostSyncScope&) = delete;
  HostSyncScope& operator=(const HostSyncScope&) = delete;

 private:
  bool active_ = false;
  HostSyncCheck previous_ = HostSyncCheck::Off;
};

// Lifts the check for its lifetime, for a deliberate wait inside a checked part (the gradient
// reducer learning its bucket order once, after its first backward), and restores it.
class HostSyncAllowed {
 public:
  HostSyncAllowed();
  ~HostSyncAllowed();
  HostSyncAllowed(const HostSyncAllowed&) = delete;
  HostSyncAllowed& operator=(const HostSyncAllowed&) = delete;

 private:
  HostSyncCheck previous_ = HostSyncCheck::Off;
};

// Whether `e` is the error LibTorch throws under HostSyncCheck::Error.
bool is_host_sync_error(const std::exception& e);

// Under Warn, how many times each part of a step made the host wait. A part's 1st, 2nd, 4th, 8th...
// time is logged, so a long run's log stays short yet still shows whether the waits go on.
class HostSyncWaitLog {
 public:
  // Counts one more time `what` waited; the note to append to its warning when this time is logged
  // (empty for the first), nullopt when it is not.
  std::optional<std::string> count(const std::string& what);

 private:
  std::map<std::string, int64_t> times_;
};

// Runs `part` of a training step under `check` and says which part made the host wait for
// `device`. Error: an error naming `what` replaces LibTorch's, which names neither the part nor
// what to do. Warn: LibTorch's warning per call, which says nothing of where, is dropped; `waits`
// decides whether this time gets one warning naming `what` and how many calls waited. Other
// warnings pass on unchanged.
void run_checked_for_host_sync(HostSyncCheck check, const std::string& what, const at::Device& device,
                               HostSyncWaitLog& waits, const std::function<void()>& part);

}  // namespace sg2
