#pragma once
// Which CUDA kernel a raw forward or gradient runs (sg2/nn/kernels.h), without LibTorch's headers:
// the CUDA launchers (src/nn/cuda/fir_bias_act_kernels.h, compiled by nvcc) take the same type.

namespace sg2::nn::kernels {

// Fastest: the specialised kernel where it is built for the launch (upfirdn2d: the tiled kernel for
// StyleGAN2's shapes, in 16-byte lanes of channels where channels_last memory allows, there staged
// in shared memory or not, whichever the shape's first launch timed faster under
// FirKernelPolicy::Autotune, else the one the policy names; bias_act: 16-byte packs where the memory
// is whole aligned packs), else the generic one. Staged and Lanes: upfirdn2d's lanes staged or
// unstaged (each thread loads its own window). Tiled: upfirdn2d's tiled kernel without lanes.
// Generic: always the generic kernel, one thread per element. (For the op benchmark and the tests
// that compare them; bias_act takes Staged, Lanes and Tiled as Fastest.) The CPU has one kernel for
// all.
enum class KernelVariant { Fastest, Staged, Lanes, Tiled, Generic };

}  // namespace sg2::nn::kernels
