// The device module answers on every build: with a GPU, without one, without CUDA at all.
#include "sg2/device/cuda_device.h"

#include <gtest/gtest.h>

#if SG2_TORCH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

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

TEST(HostSyncCheck, NamesRoundTripAndOthersAreRefused) {
  for (const HostSyncCheck check : {HostSyncCheck::Off, HostSyncCheck::Warn, HostSyncCheck::Error}) {
    EXPECT_EQ(parse_host_sync_check(to_string(check)), check);
  }
  try {
    parse_host_sync_check("strict");
    FAIL() << "an unknown check was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'strict' (expected off, warn or error)"), std::string::npos) << e.what();
  }
}

// A CUDA LibTorch (the wheel build, GPU or not) has the check; Debian's CPU LibTorch does not, and
// a scope there leaves it off.
TEST(HostSyncCheck, AScopeSetsTheCheckAndRestoresTheOneBefore) {
  EXPECT_EQ(host_sync_check_available(), SG2_TORCH_CUDA == 1);
  EXPECT_EQ(current_host_sync_check(), HostSyncCheck::Off);
  {
    const HostSyncScope outer(HostSyncCheck::Error);
    const HostSyncCheck expected = host_sync_check_available() ? HostSyncCheck::Error : HostSyncCheck::Off;
    EXPECT_EQ(current_host_sync_check(), expected);
    {
      const HostSyncScope inner(HostSyncCheck::Warn);  // does not lift the outer one
      EXPECT_EQ(current_host_sync_check(), expected);
      const HostSyncScope off(HostSyncCheck::Off);
      EXPECT_EQ(current_host_sync_check(), expected);
    }
    EXPECT_EQ(current_host_sync_check(), expected);
  }
  EXPECT_EQ(current_host_sync_check(), HostSyncCheck::Off);
  {
    const HostSyncScope warn(HostSyncCheck::Warn);
    EXPECT_EQ(current_host_sync_check(), host_sync_check_available() ? HostSyncCheck::Warn : HostSyncCheck::Off);
  }
  EXPECT_EQ(current_host_sync_check(), HostSyncCheck::Off);
}

#if SG2_TORCH_CUDA
// LibTorch's own hook, which every synchronizing CUDA op calls (no GPU needed to call it): it
// throws under Error only, and is_host_sync_error recognises what it throws.
TEST(HostSyncCheck, LibTorchsCheckThrowsUnderErrorOnly) {
  EXPECT_NO_THROW(c10::cuda::warn_or_error_on_sync());
  {
    const HostSyncScope warn(HostSyncCheck::Warn);
    EXPECT_NO_THROW(c10::cuda::warn_or_error_on_sync());
  }
  const HostSyncScope error(HostSyncCheck::Error);
  try {
    c10::cuda::warn_or_error_on_sync();
    FAIL() << "no error under HostSyncCheck::Error";
  } catch (const std::exception& e) {
    EXPECT_TRUE(is_host_sync_error(e)) << e.what();
  }
  EXPECT_FALSE(is_host_sync_error(std::runtime_error("CUDA out of memory")));
}

// A deliberate wait inside a checked part (the reducer learning its bucket order once) is allowed,
// and the check is back after it.
TEST(HostSyncCheck, AllowedLiftsTheCheckForItsLifetimeOnly) {
  const HostSyncScope error(HostSyncCheck::Error);
  {
    const HostSyncAllowed once;
    EXPECT_EQ(current_host_sync_check(), HostSyncCheck::Off);
    EXPECT_NO_THROW(c10::cuda::warn_or_error_on_sync());
  }
  EXPECT_EQ(current_host_sync_check(), HostSyncCheck::Error);
  EXPECT_THROW(c10::cuda::warn_or_error_on_sync(), std::exception);
}
#endif

// On a GPU, the ops themselves: .item() of a CUDA tensor throws under Error, not outside it.
TEST(HostSyncCheck, AnItemOfACudaTensorThrowsInsideTheScopeOnly) {
  if (query_cuda_runtime().devices.empty() || !at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  const at::Tensor x = at::ones({4}, at::TensorOptions(at::Device(at::kCUDA)));
  {
    const HostSyncScope error(HostSyncCheck::Error);
    const at::Tensor y = x * 2 + 1;  // kernels only: allowed
    try {
      (void)y.sum().item<float>();
      FAIL() << ".item() did not throw under HostSyncCheck::Error";
    } catch (const std::exception& e) {
      EXPECT_TRUE(is_host_sync_error(e)) << e.what();
    }
  }
  EXPECT_EQ(x.sum().item<float>(), 4.0f);
}

}  // namespace
}  // namespace sg2
