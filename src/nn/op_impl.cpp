// The choice between the hand-written kernels and the reference ops (op_impl.h, kernels.h).
#include "sg2/nn/kernels.h"

#include "sg2/core/error.h"
#include "sg2/nn/op_impl.h"

#if SG2_CUDA_KERNELS
#include "cuda/kernels_cuda.h"
#endif

#include <atomic>

namespace sg2::nn {

namespace ops {

namespace {
thread_local Impl t_default_impl = Impl::Fast;
}  // namespace

const char* to_string(Impl impl) { return impl == Impl::Fast ? "fast" : "reference"; }

Impl default_impl() { return t_default_impl; }

ImplScope::ImplScope(Impl impl) : outer_(t_default_impl) { t_default_impl = impl; }

ImplScope::~ImplScope() { t_default_impl = outer_; }

}  // namespace ops

namespace kernels {

bool cuda_kernels_built() { return SG2_CUDA_KERNELS != 0; }

bool supported(const at::Tensor& x) {
#if SG2_CUDA_KERNELS
  if (gpu::supported(x)) return true;
#endif
  return x.device().is_cpu() && x.scalar_type() == at::kFloat;
}

bool runs_kernel(ops::Impl impl, const at::Tensor& x) { return impl == ops::Impl::Fast && supported(x); }

namespace {
std::atomic<FirKernelPolicy> g_fir_kernel_policy{FirKernelPolicy::Autotune};
}  // namespace

void set_fir_kernel_policy(FirKernelPolicy policy) { g_fir_kernel_policy = policy; }

FirKernelPolicy fir_kernel_policy() { return g_fir_kernel_policy; }

}  // namespace kernels

}  // namespace sg2::nn
