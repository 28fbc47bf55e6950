#pragma once
// Which GPUs the CUDA kernels of a build run on. nvcc compiles them as machine code (SASS) for some
// architectures and as PTX for others: SASS of sm_XY runs on GPUs of compute capability X.Z with
// Z >= Y (the same major version), PTX of compute_XY is compiled by the driver for any GPU of
// capability X.Y or newer. A GPU with neither has no kernel image: the ops then run their reference
// implementations (one log line says why; kernels_cuda.cpp), never a failed launch. The build's
// list is SG2_CUDA_ARCHITECTURES with the architectures of LibTorch's own flags. Plain C++: the CPU
// tests check the rules and the decision.

#include <string>
#include <vector>

namespace sg2::ops {

struct CudaArchitectures {
  std::vector<int> sass;  // e.g. 75, 80, 86, 89, 90
  std::vector<int> ptx;   // e.g. 90
};

// CMAKE_CUDA_ARCHITECTURES' form, ';' or ',' separated: "75-real" (SASS), "90-virtual" (PTX), "90"
// (both). Errors name the entry.
CudaArchitectures parse_cuda_architectures(const std::string& list);
// This build's (empty where the CUDA kernels are not built).
CudaArchitectures built_cuda_architectures();

enum class KernelImage { Sass, Ptx, None };
// compute_capability: 10 * major + minor (8.6 -> 86).
KernelImage kernel_image_for(const CudaArchitectures& built, int compute_capability);

// "sm_75, sm_80, sm_86, sm_89, sm_90 and PTX compute_90" (or "no architectures").
std::string describe(const CudaArchitectures& built);

// Whether a GPU runs the kernels: the driver's answer (driver_error: "" where it loaded a kernel of
// the same file, else its error), which the build's list may not fully predict (LibTorch's flags add
// architectures); where it does not, `reason` says why in the user's terms, from the build's list.
struct KernelDecision {
  bool run = false;
  std::string reason;  // empty where they run
};
KernelDecision decide_kernels(const CudaArchitectures& built, int compute_capability, const std::string& driver_error);

}  // namespace sg2::ops
