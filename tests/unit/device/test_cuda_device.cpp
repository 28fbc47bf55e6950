// The device module answers on every build: with a GPU, without one, without CUDA at all.
#include "sg2/device/cuda_device.h"

#include <gtest/gtest.h>

namespace sg2 {
namespace {

TEST(CudaRuntime, AnswersWithoutCrashing) {
  const CudaRuntimeInfo info = query_cuda_runtime();
  if (info.devices.empty()) {
    EXPECT_FALSE(info.error.empty());
  }
  if (!info.compiled) {
    EXPECT_NE(info.error.find("SG2_WITH_CUDA=OFF"), std::string::npos) << info.error;
    EXPECT_THROW(select_cuda_device(0), std::exception);
  }
}

TEST(DeviceMemory, TheCpuHasNoAllocatorToAsk) {
  const at::Device cpu(at::kCPU);
  reset_device_peak_memory(cpu);
  EXPECT_EQ(device_peak_memory_gib(cpu), 0.0);
  EXPECT_EQ(device_total_memory_gib(cpu), 0.0);
  release_cached_device_memory(cpu);
}

TEST(DeviceMemory, TheCudaAllocatorCountsWhatATensorHolds) {
  if (query_cuda_runtime().devices.empty() || !at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  const at::Device gpu(at::kCUDA, 0);
  release_cached_device_memory(gpu);
  reset_device_peak_memory(gpu);
  {
    const at::Tensor block = at::empty({64 << 20}, at::TensorOptions(gpu).dtype(at::kFloat));  // 256 MiB
    EXPECT_GE(device_peak_memory_gib(gpu), 0.25);
  }
  EXPECT_GT(device_total_memory_gib(gpu), 1.0);
  EXPECT_NE(current_cuda_stream(gpu), nullptr);
}

}  // namespace
}  // namespace sg2
