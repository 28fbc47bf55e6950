// CUDA LibTorch: peak bytes allocated by the caching allocator.
#include "sg2/train/device_memory.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>

namespace sg2::train {

namespace {
// Index of the all-pools statistic: StatType::AGGREGATE, declared in c10::cuda::CUDACachingAllocator
// by LibTorch 1.x and in c10 by 2.x; 0 in both.
constexpr size_t kAggregateStat = 0;
}  // namespace

double device_peak_memory_gib(const at::Device& device) {
  if (!device.is_cuda()) return 0.0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  const auto& peak = stats.allocated_bytes[kAggregateStat];
  return static_cast<double>(peak.peak) / (1024.0 * 1024.0 * 1024.0);
}

void reset_device_peak_memory(const at::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
}

double device_total_memory_gib(const at::Device& device) {
  if (!device.is_cuda()) return 0.0;
  return static_cast<double>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
}

void release_cached_device_memory(const at::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::emptyCache();
}

}  // namespace sg2::train
