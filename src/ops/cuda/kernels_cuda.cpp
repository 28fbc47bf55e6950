// Tensor side of the CUDA kernels (see kernels_cuda.h).
#include "kernels_cuda.h"

#include "../channel_layout.h"
#include "epilogue_elements.h"
#include "fir_bias_act_elements.h"
#include "fir_lanes_elements.h"
#include "sg2/core/error.h"
#include "sg2/ops/cuda_architectures.h"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace sg2::ops::kernels::gpu {

namespace {

cuda::ElementType element_type(const at::Tensor& x) {
  switch (x.scalar_type()) {
    case at::kFloat: return cuda::ElementType::Float32;
    case at::kHalf: return cuda::ElementType::Float16;
    case at::kBFloat16: return cuda::ElementType::BFloat16;
    default: SG2_FAIL("CUDA kernels take float32, float16 or bfloat16 tensors, got {}", c10::toString(x.scalar_type()));
  }
}

void* current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }

// Whether GPU `device` runs the kernels (the driver's answer); where not, one log line says that
// the reference ops run there, and why.
bool decide_kernel_image(int device) {
  const cudaDeviceProp* properties = at::cuda::getDeviceProperties(device);
  const KernelDecision decision = decide_kernels(built_cuda_architectures(), properties->major * 10 + properties->minor,
                                                 cuda::kernel_image_error(device));
  if (!decision.run) {
    spdlog::warn("GPU {} ({}, compute capability {}.{}): upfirdn2d, bias_act and the synthesis epilogue run their "
                 "reference implementations: {}", device, properties->name, properties->major, properties->minor,
                 decision.reason);
  }
  return decision.run;
}

// decide_kernel_image, once per device.
bool device_runs_kernels(int device) {
  static std::array<std::atomic<int>, 64> known{};  // 0: not yet asked, 1: loads, 2: does not
  static std::mutex deciding;
  if (device < 0 || device >= static_cast<int>(known.size())) return decide_kernel_image(device);
  if (known[device].load() == 0) {
    const std::lock_guard<std::mutex> lock(deciding);
    if (known[device].load() == 0) known[device].store(decide_kernel_image(device) ? 1 : 2);
  }
  return known[device].load() == 1;
}

}  // namespace

bool supported(const at::Tensor& x) {
  const auto type = x.scalar_type();
  return x.is_cuda() && (type == at::kFloat || type == at::kHalf || type == at::kBFloat16) &&
         device_runs_kernels(x.get_device());
}

at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p, int64_t out_h,
                             int64_t out_w, Kernel kernel) {
  SG2_CHECK(supported(x) && x.dim() == 4, "upfirdn2d CUDA kernel: expected a 4-D CUDA tensor, got {} {}",
            c10::toString(x.scalar_type()), x.sizes());
  const c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor filter = f.to(x.device(), at::kFloat).contiguous();
  at::Tensor y = at::empty({x.size(0), x.size(1), out_h, out_w}, x.options().memory_format(ops::layout_of(x)));
  cuda::FirLaunch job = fir_launch(x, filter, p, out_h, out_w);
  job.y = y.data_ptr();
  cuda::launch_upfirdn2d(job, element_type(x), current_stream(), kernel);
  return y;
}

bool runs_packed(const at::Tensor& x_in) {
  const at::Tensor x = dense(x_in);
  return cuda::runs_in_lanes(x.numel(), cuda::kLaneBytes / static_cast<int>(x.element_size()), {x.data_ptr()});
}

at::Tensor bias_act_forward(const at::Tensor& x_in, const at::Tensor& b_in, int64_t dim, const cuda::ActivationParams& a,
                            Kernel kernel) {
  SG2_CHECK(supported(x_in), "bias_act CUDA kernel: expected a CUDA tensor, got {}", c10::toString(x_in.scalar_type()));
  const c10::cuda::CUDAGuard guard(x_in.device());
  const at::Tensor x = dense(x_in);
  const ChannelLayout l = channel_layout(x, dim);
  check_bias(b_in, x, dim, l);
  const at::Tensor b = b_in.defined() ? b_in.to(x.device(), x.scalar_type()).contiguous() : at::Tensor();
  at::Tensor y = at::empty_like(x);  // x's layout
  cuda::launch_bias_act(x.data_ptr(), b.defined() ? b.data_ptr() : nullptr, y.data_ptr(), x.numel(), l.channels,
                        l.inner, a, element_type(x), current_stream(), kernel != Kernel::PerElement);
  return y;
}

at::Tensor bias_act_grad(const at::Tensor& dy_in, const at::Tensor& y_in, const cuda::ActivationParams& a,
                         Kernel kernel) {
  SG2_CHECK(supported(y_in), "bias_act_grad CUDA kernel: expected a CUDA tensor, got {}",
            c10::toString(y_in.scalar_type()));
  const c10::cuda::CUDAGuard guard(y_in.device());
  const at::Tensor y = dense(y_in), dy = laid_out_like(dy_in, y);  // checks dy's shape
  at::Tensor dx = at::empty_like(y);
  cuda::launch_bias_act_grad(dy.data_ptr(), y.data_ptr(), dx.data_ptr(), y.numel(), a, element_type(y),
                             current_stream(), kernel != Kernel::PerElement);
  return dx;
}

bool epilogue_runs_packed(const at::Tensor& x) {
  if (!supported(x) || !epilogue_takes_layout(x)) return false;
  return cuda::epilogue_runs_in_lanes(epilogue_launch_for(x), element_type(x));
}

at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const cuda::ActivationParams& a) {
  const c10::cuda::CUDAGuard guard(t.x.device());
  at::Tensor y = at::empty_like(t.x);  // x's layout
  cuda::EpilogueLaunch job = epilogue_launch(t);
  job.out = y.data_ptr();
  cuda::launch_conv_epilogue(job, a, element_type(t.x), current_stream());
  return y;
}

EpilogueGradient conv_epilogue_grad(const at::Tensor& dy_in, const at::Tensor& y_in, const EpilogueTensors& t,
                                    const cuda::ActivationParams& a, bool sums_of_x) {
  const c10::cuda::CUDAGuard guard(t.x.device());
  // Views at an odd offset are copied: the kernel reads whole aligned packs, in x's layout.
  static_assert(kPackBytes == static_cast<std::uintptr_t>(cuda::kLaneBytes),
                "one pack size for the op and the kernels");
  const at::Tensor y = aligned(laid_out_like(y_in, t.x)), dy = aligned(laid_out_like(dy_in, t.x));
  cuda::EpilogueLaunch job = epilogue_launch(t);
  const int64_t samples = t.x.size(0), channels = t.x.size(1), lanes = cuda::kLaneBytes / t.x.element_size();
  job.chunks = job.channels_last ? cuda::epilogue_grad_pixel_chunks(samples, job.plane_elements, channels / lanes)
                                 : cuda::epilogue_grad_chunks(job.planes, job.plane_elements / lanes);
  // [N, chunks, C, 3] (channels_last) or [N, C, chunks, 3]
  const int64_t chunk_dim = job.channels_last ? 1 : 2;
  const at::Tensor partial_sums = job.channels_last ? at::empty({samples, job.chunks, channels, 3}, t.demod.options())
                                                    : at::empty({samples, channels, job.chunks, 3}, t.demod.options());
  at::Tensor dx = at::empty_like(t.x);
  if (!sums_of_x) job.x = nullptr;  // x unread, its sums 0
  job.dy = dy.data_ptr();
  job.y = y.data_ptr();
  job.out = dx.data_ptr();
  job.sums = partial_sums.data_ptr<float>();
  cuda::launch_conv_epilogue_grad(job, a, element_type(t.x), current_stream());
  return {dx, job.chunks == 1 ? partial_sums.squeeze(chunk_dim) : partial_sums.sum(chunk_dim)};
}

}  // namespace sg2::ops::kernels::gpu
