// The choice between the hand-written kernels and the reference ops (kernel.h, kernels.h).
#include "sg2/ops/kernels.h"

#if SG2_CUDA_KERNELS
#include "cuda/kernels_cuda.h"
#endif

namespace sg2::ops::kernels {

bool cuda_kernels_built() { return SG2_CUDA_KERNELS != 0; }

bool supported(const at::Tensor& x) {
#if SG2_CUDA_KERNELS
  if (gpu::supported(x)) return true;
#endif
  return x.device().is_cpu() && x.scalar_type() == at::kFloat;
}

bool runs_kernel(Kernel kernel, const at::Tensor& x) { return kernel != Kernel::Reference && supported(x); }

}  // namespace sg2::ops::kernels
