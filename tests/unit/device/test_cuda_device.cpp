// The device module answers on every build: with a GPU, without one, without CUDA at all.
#include "sg2/device/cuda_device.h"

#include "sg2/core/error.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <sstream>

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
  // A capability for each device there is (3.5 and up), none for a device there is not.
  for (int i = 0; i < static_cast<int>(info.devices.size()); ++i) EXPECT_GE(cuda_compute_capability(i), 35) << i;
  EXPECT_EQ(cuda_compute_capability(static_cast<int>(info.devices.size())), 0);
  EXPECT_EQ(query_cuda_runtime().devices, info.devices);  // the failed query left no error behind
}

TEST(DeviceMemory, TheCpuHasNoAllocatorToAsk) {
  const at::Device cpu(at::kCPU);
  reset_device_peak_memory(cpu);
  EXPECT_EQ(device_peak_memory_gib(cpu), 0.0);
  EXPECT_EQ(device_total_memory_gib(cpu), 0.0);
  EXPECT_EQ(device_memory_outside_allocator_gib(cpu), 0.0);
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
  const double outside_gib = device_memory_outside_allocator_gib(gpu);  // the CUDA context at least
  EXPECT_GT(outside_gib, 0.0);
  EXPECT_LT(outside_gib, device_total_memory_gib(gpu));
  {
    const at::Tensor block = at::empty({64 << 20}, at::TensorOptions(gpu).dtype(at::kFloat));  // 256 MiB
    EXPECT_GE(device_peak_memory_gib(gpu), 0.25);
    EXPECT_NEAR(device_memory_outside_allocator_gib(gpu), outside_gib, 0.1);  // the block is the allocator's
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

// What spdlog's default logger writes while it lives.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

// The messages of the c10 warnings raised on this thread while it is installed.
class WarningRecorder : public c10::WarningHandler {
 public:
#if TORCH_VERSION_MAJOR >= 2
  WarningRecorder() : guard_(this) {}
  void process(const c10::Warning& warning) override { messages.push_back(warning.msg()); }
  c10::WarningUtils::WarningHandlerGuard guard_;
#else
  WarningRecorder() : guard_(this) {}
  void process(const c10::SourceLocation&, const std::string& message, const bool) override {
    messages.push_back(message);
  }
  c10::Warning::WarningHandlerGuard guard_;
#endif
  std::vector<std::string> messages;
};

// Whatever the build, a checked part runs, and an error that is not a host synchronisation passes
// through unchanged; other warnings reach the handler before, in Warn mode as well.
TEST(HostSyncCheck, ACheckedPartRunsAndPassesOtherErrorsAndWarningsOn) {
  const at::Device gpu(at::kCUDA, 0);
  const WarningRecorder recorder;
  HostSyncWaitLog waits;
  for (const HostSyncCheck check : {HostSyncCheck::Off, HostSyncCheck::Warn, HostSyncCheck::Error}) {
    int runs = 0;
    run_checked_for_host_sync(check, "Gmain", gpu, waits, [&] {
      ++runs;
      TORCH_WARN("an unrelated warning");
    });
    EXPECT_EQ(runs, 1);
    EXPECT_THROW(run_checked_for_host_sync(check, "Gmain", gpu, waits, [] { throw std::out_of_range("no"); }),
                 std::out_of_range);
  }
  EXPECT_EQ(recorder.messages, std::vector<std::string>(3, "an unrelated warning"));
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

// Warn: LibTorch's warning per waiting call becomes one warning that names the part and counts the
// calls; other warnings still reach the handler before, which is back afterwards.
TEST(HostSyncCheck, WarnNamesThePartAndCountsItsWaits) {
  const WarningRecorder recorder;
  const LogCapture log;
  HostSyncWaitLog waits;
  const auto greg = [] {
    c10::cuda::warn_or_error_on_sync();
    TORCH_WARN("an unrelated warning");
    c10::cuda::warn_or_error_on_sync();
  };
  run_checked_for_host_sync(HostSyncCheck::Warn, "Greg", at::Device(at::kCUDA, 0), waits, greg);
  EXPECT_NE(log.text().find("Greg made the host wait for cuda:0 2 times (run.host_sync_check = warn): an op such "
                            "as .item()"),
            std::string::npos)
      << log.text();
  run_checked_for_host_sync(HostSyncCheck::Warn, "Dmain", at::Device(at::kCUDA, 0), waits, [] {});
  EXPECT_EQ(log.text().find("Dmain"), std::string::npos) << log.text();
  run_checked_for_host_sync(HostSyncCheck::Warn, "Greg", at::Device(at::kCUDA, 0), waits, greg);
  EXPECT_NE(log.text().find("(time 2 this part waited; logged at times 1, 2, 4, 8, ...)"), std::string::npos)
      << log.text();
  const size_t logged = log.text().size();
  run_checked_for_host_sync(HostSyncCheck::Warn, "Greg", at::Device(at::kCUDA, 0), waits, greg);  // time 3
  EXPECT_EQ(log.text().size(), logged) << log.text();
  EXPECT_EQ(recorder.messages, std::vector<std::string>(3, "an unrelated warning"));  // one per run of Greg
  {
    const HostSyncScope warn(HostSyncCheck::Warn);
    c10::cuda::warn_or_error_on_sync();  // outside a checked part: LibTorch's own warning
  }
  ASSERT_EQ(recorder.messages.size(), 4u);
  EXPECT_NE(recorder.messages[3].find("called a synchronizing CUDA operation"), std::string::npos);
}

// Error: the first waiting call fails the part, with an error that names it and what to look for.
TEST(HostSyncCheck, ErrorNamesThePart) {
  try {
    HostSyncWaitLog waits;
    run_checked_for_host_sync(HostSyncCheck::Error, "the G_ema update", at::Device(at::kCUDA, 0), waits, [] {
      c10::cuda::warn_or_error_on_sync();
      FAIL() << "the part went on after a host synchronisation under Error";
    });
    FAIL() << "no error under HostSyncCheck::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the G_ema update made the host wait for cuda:0 (run.host_sync_check = "
                                         "error): an op such as .item()"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(current_host_sync_check(), HostSyncCheck::Off);
}
#endif

// A part's 1st, 2nd, 4th, 8th... wait is logged, each part counted by itself.
TEST(HostSyncCheck, AWaitLogShowsEachPartsPowerOfTwoTimes) {
  HostSyncWaitLog waits;
  std::vector<int64_t> logged;
  for (int64_t time = 1; time <= 20; ++time) {
    if (waits.count("Gmain")) logged.push_back(time);
  }
  EXPECT_EQ(logged, (std::vector<int64_t>{1, 2, 4, 8, 16}));
  EXPECT_EQ(waits.count("Dmain"), std::string());
  EXPECT_EQ(waits.count("Dmain"), " (time 2 this part waited; logged at times 1, 2, 4, 8, ...)");
  EXPECT_EQ(waits.count("Dmain"), std::nullopt);
}

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
  const LogCapture log;
  HostSyncWaitLog waits;
  run_checked_for_host_sync(HostSyncCheck::Warn, "Gmain", x.device(), waits, [&] { (void)x.sum().item<float>(); });
  EXPECT_NE(log.text().find("Gmain made the host wait for " + x.device().str() + " 1 time "), std::string::npos)
      << log.text();
}

}  // namespace
}  // namespace sg2
