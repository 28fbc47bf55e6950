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

// Runs in a process of its own (one gtest per ctest process), so the statistics are asked for
// before the process has any CUDA tensor, as train.batch_gpu auto does; "cuda" alone means the
// current device. The default stream's handle is null, so the stream is only asked for.
TEST(DeviceMemory, TheCudaAllocatorCountsWhatATensorHolds) {
  if (query_cuda_runtime().devices.empty() || !at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  const at::Device gpu(at::kCUDA);
  reset_device_peak_memory(gpu);
  EXPECT_EQ(device_peak_memory_gib(gpu), 0.0);
  {
    const at::Tensor block = at::empty({64 << 20}, at::TensorOptions(gpu).dtype(at::kFloat));  // 256 MiB
    EXPECT_GE(device_peak_memory_gib(gpu), 0.25);
  }
  release_cached_device_memory(gpu);
  reset_device_peak_memory(gpu);
  EXPECT_EQ(device_peak_memory_gib(at::Device(at::kCUDA, 0)), 0.0);
  EXPECT_GT(device_total_memory_gib(gpu), 1.0);
  EXPECT_NO_THROW(current_cuda_stream(gpu));
}

}  // namespace
}  // namespace sg2
