#pragma once
// Hand-written kernels for the memory-bound StyleGAN2 ops, each beside its reference:
// upfirdn2d (sg2/nn/upfirdn2d.h) and bias_act (sg2/nn/bias_act.h). Each op's file holds its
// reference, its autograd function and the choice between them; the raw kernels are per device:
// src/nn/*_cpu.cpp (float32, compiled once per CPU level) and src/nn/cuda/ (float32, float16 and
// bfloat16; built when LibTorch has CUDA and the toolkit is found). Tested against the references in
// tests/unit/nn.

#include "sg2/core/enum_names.h"
#include "sg2/nn/kernel_variant.h"  // KernelVariant: which CUDA kernel a raw forward or gradient runs
#include "sg2/nn/op_impl.h"

#include <ATen/core/Tensor.h>

#include <string>

namespace sg2::nn::kernels {

// Whether the kernels handle these tensors (float32 on the CPU; float32, float16 or bfloat16 on
// CUDA where the CUDA kernels are built).
bool supported(const at::Tensor& x);

// Whether an op called with `impl` runs its kernel on x.
bool runs_kernel(ops::Impl impl, const at::Tensor& x);

// Whether this build has the CUDA kernels.
bool cuda_kernels_built();

// Which of its two kernels in lanes upfirdn2d's Fastest variant runs (run.fir_kernel): Autotune
// (the default) times both on each new shape and keeps the faster; Staged and Unstaged always run
// that one (Unstaged: the kernel the second H200 run timed, kept as the fallback should the staged
// one fail on a GPU).
enum class FirKernelPolicy { Autotune, Staged, Unstaged };
inline constexpr EnumNames<FirKernelPolicy, 3> kFirKernelPolicyNames{
    {{FirKernelPolicy::Autotune, "autotune"}, {FirKernelPolicy::Staged, "staged"}, {FirKernelPolicy::Unstaged, "unstaged"}}};
constexpr const auto& enum_names(FirKernelPolicy) { return kFirKernelPolicyNames; }  // config fields by name
void set_fir_kernel_policy(FirKernelPolicy policy);
FirKernelPolicy fir_kernel_policy();

// Which CUDA kernel upfirdn2d's Fastest variant runs on given arguments: the generic one (also
// wherever no CUDA kernel runs), the tiled one, or the tiled one in 16-byte lanes of channels (with
// the block's input staged in shared memory or not, whichever the shape's first launch timed faster).
enum class FirKernelRun { Generic, Tiled, InLanes };

}  // namespace sg2::nn::kernels
