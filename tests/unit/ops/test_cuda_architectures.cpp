// Which GPUs the CUDA kernels run on (cuda_architectures.h): the SASS and PTX compatibility rules
// for the common GPUs, the parsing of CMAKE_CUDA_ARCHITECTURES' form, and this build's list. The
// driver decides whether a GPU runs the kernels or the reference ops, the rules say why; on a GPU,
// the kernels run exactly where the build's list covers it.
#include "sg2/device/cuda_device.h"
#include "sg2/ops/cuda_architectures.h"
#include "sg2/ops/kernels.h"
#include "ops_test_support.h"
#include "test_support.h"

namespace sg2::ops {
namespace {

TEST(CudaArchitectures, EveryCommonGpuFindsAnImageInTheDefaultList) {
  const CudaArchitectures built = parse_cuda_architectures("70-real;75-real;80-real;86-real;89-real;90");
  EXPECT_EQ(built.sass, (std::vector<int>{70, 75, 80, 86, 89, 90}));
  EXPECT_EQ(built.ptx, (std::vector<int>{90}));
  // V100, T4, A100, A10 / RTX 3090, Jetson Orin, L4 / L40 / RTX 4090, H100 / H200: machine code.
  for (const int gpu : {70, 75, 80, 86, 87, 89, 90}) EXPECT_EQ(kernel_image_for(built, gpu), KernelImage::Sass) << gpu;
  // Blackwell (B200, RTX 5090): Hopper's PTX, compiled by the driver.
  for (const int gpu : {100, 120}) EXPECT_EQ(kernel_image_for(built, gpu), KernelImage::Ptx) << gpu;
  EXPECT_EQ(kernel_image_for(built, 61), KernelImage::None);  // P100: the reference ops
  EXPECT_EQ(describe(built), "sm_70, sm_75, sm_80, sm_86, sm_89, sm_90 and PTX compute_90");
}

TEST(CudaArchitectures, MachineCodeRunsOnlyWithinItsMajorVersion) {
  const CudaArchitectures old_default = parse_cuda_architectures("80-real,90-real");
  EXPECT_EQ(kernel_image_for(old_default, 75), KernelImage::None);   // a T4 had no image
  EXPECT_EQ(kernel_image_for(old_default, 86), KernelImage::Sass);   // sm_80 runs on 8.6
  EXPECT_EQ(kernel_image_for(old_default, 100), KernelImage::None);  // no PTX: nothing for Blackwell
  const CudaArchitectures ptx_only = parse_cuda_architectures("75-virtual");
  EXPECT_TRUE(ptx_only.sass.empty());
  EXPECT_EQ(kernel_image_for(ptx_only, 90), KernelImage::Ptx);
  EXPECT_EQ(kernel_image_for(ptx_only, 70), KernelImage::None);  // PTX needs a GPU at least as new
  EXPECT_EQ(describe(parse_cuda_architectures("")), "no architectures");
  EXPECT_NE(sg2::test::error_message([] { parse_cuda_architectures("86-fast"); }).find("'86-fast'"), std::string::npos);
}

TEST(CudaArchitectures, TheDriverDecidesAndTheListExplains) {
  const CudaArchitectures built = parse_cuda_architectures("75-real;80-real;90;90-real");
  EXPECT_EQ(built.sass, (std::vector<int>{75, 80, 90}));  // repeated entries once
  // The driver loaded the kernels: they run, whatever the list predicted (LibTorch's flags add to it).
  EXPECT_TRUE(decide_kernels(built, 70, "").run);
  const KernelDecision volta = decide_kernels(built, 70, "no kernel image is available for execution");
  EXPECT_FALSE(volta.run);
  EXPECT_NE(volta.reason.find("none of which runs on compute capability 7.0"), std::string::npos) << volta.reason;
  EXPECT_NE(volta.reason.find("-DSG2_CUDA_ARCHITECTURES=\"70-real;90\""), std::string::npos) << volta.reason;
  const KernelDecision old_driver = decide_kernels(built, 120, "the provided PTX was compiled with an "
                                                   "unsupported toolchain");
  EXPECT_FALSE(old_driver.run);
  EXPECT_NE(old_driver.reason.find("update the driver"), std::string::npos) << old_driver.reason;
  EXPECT_NE(old_driver.reason.find("unsupported toolchain"), std::string::npos) << old_driver.reason;
}

TEST(CudaArchitectures, ThisBuildNamesWhatItCompiled) {
  const CudaArchitectures built = built_cuda_architectures();
  if (!kernels::cuda_kernels_built()) {
    EXPECT_TRUE(built.sass.empty() && built.ptx.empty());
    return;
  }
  EXPECT_FALSE(built.sass.empty() && built.ptx.empty()) << describe(built);
  for (const int arch : built.sass) EXPECT_EQ(kernel_image_for(built, arch), KernelImage::Sass) << arch;
  if (!built.ptx.empty()) {
    EXPECT_EQ(kernel_image_for(built, 200), KernelImage::Ptx);  // any newer GPU
  }
}

// The kernels run on a GPU that the build's architectures cover and only there (elsewhere the
// reference ops run, with a log line): on the H100 / H200 of sm_90, they must run.
TEST(CudaKernels, RunWhereTheBuildHasAnImageForTheGpu) {
  SKIP_WITHOUT_CUDA_KERNELS();
  const CudaArchitectures built = built_cuda_architectures();
  const int capability = cuda_compute_capability(0);
  const bool expected = kernel_image_for(built, capability) != KernelImage::None;
  EXPECT_EQ(kernels::supported(at::zeros({4}, at::TensorOptions(at::kCUDA))), expected)
      << "compute capability " << capability << ", built for " << describe(built);
}

}  // namespace
}  // namespace sg2::ops
