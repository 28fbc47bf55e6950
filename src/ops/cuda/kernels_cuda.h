#pragma once
// The raw CUDA kernels (kernels.h), the counterparts of ../cpu_kernels.h: tensor checks, output
// allocation, the current stream, then the launchers of fir_bias_act_kernels.cu. Built when LibTorch
// has CUDA and the CUDA toolkit is found (SG2_CUDA_KERNELS); the ops' autograd functions
// (upfirdn2d.cpp, bias_act.cpp) call these for CUDA tensors, so the gradients (to any order) run on
// the GPU as well.

#include "fir_bias_act_elements.h"
#include "fir_bias_act_kernels.h"
#include "fir_lanes_elements.h"
#include "sg2/ops/conv_epilogue.h"
#include "sg2/ops/upfirdn2d.h"


namespace sg2::ops::kernels::gpu {

// The launch description of upfirdn2d for x (any strides) and a float32 filter, in x's memory,
// writing y in ops::layout_of(x).
inline cuda::FirLaunch fir_launch(const at::Tensor& x, const at::Tensor& filter, const ops::FirParams& p,
                                  int64_t out_h, int64_t out_w) {
  cuda::FirLaunch job{};
  job.x = x.data_ptr();
  job.filter = filter.data_ptr<float>();
  job.batch = x.size(0);
  job.channels = x.size(1);
  job.in_h = x.size(2);
  job.in_w = x.size(3);
  job.stride_n = x.stride(0);
  job.stride_c = x.stride(1);
  job.stride_y = x.stride(2);
  job.stride_x = x.stride(3);
  job.out_h = out_h;
  job.out_w = out_w;
  job.filter_h = static_cast<int>(filter.size(0));
  job.filter_w = static_cast<int>(filter.size(1));
  job.up = static_cast<int>(p.up);
  job.down = static_cast<int>(p.down);
  job.pad_x0 = static_cast<int>(p.padding[0]);
  job.pad_y0 = static_cast<int>(p.padding[2]);
  job.flip_filter = p.flip_filter;
  job.channels_last = ops::layout_of(x) == at::MemoryFormat::ChannelsLast;
  job.gain = static_cast<float>(p.gain);
  return job;
}

// float32, float16 or bfloat16 on a CUDA device that loads the kernels (cuda_architectures.h).
bool supported(const at::Tensor& x);

// The kernel that upfirdn2d_forward runs under Kernel::Auto on these arguments: Tiled where
// cuda::with_fixed_fir builds it, ChannelLanes where cuda::fir_runs_in_lanes allows, else PerElement.
// Host arithmetic only: for a CPU tensor, the kernel the same shapes, strides, type and alignment
// would take on a GPU (tests ask it of a CPU training step's calls).
inline Kernel fir_auto_kernel(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p, int64_t out_h,
                                   int64_t out_w) {
  const at::Tensor filter = f.to(at::kFloat).contiguous();  // fir_launch reads its float32 pointer
  const cuda::FirLaunch job = fir_launch(x, filter, p, out_h, out_w);  // y: a fresh allocation, aligned
  if (!cuda::with_fixed_fir(job, [](auto) {})) return Kernel::PerElement;
  const bool lanes = cuda::fir_runs_in_lanes(job, cuda::kLaneBytes / static_cast<int>(x.element_size()));
  return lanes ? Kernel::ChannelLanes : Kernel::Tiled;
}

// x: [N, C, H, W] -> [N, C, out_h, out_w] in ops::layout_of(x), x's dtype, by `kernel` where it
// takes the launch (Auto's choice otherwise).
at::Tensor upfirdn2d_forward(const at::Tensor& x, const at::Tensor& f, const ops::FirParams& p, int64_t out_h,
                             int64_t out_w, Kernel kernel);

// Whether bias_act_forward runs x in 16-byte packs (cuda::runs_in_lanes; y is a fresh allocation).
bool runs_packed(const at::Tensor& x);

// b: [x.size(dim)] (cast to x's dtype) or undefined; y in x's layout (../channel_layout.h).
at::Tensor bias_act_forward(const at::Tensor& x, const at::Tensor& b, int64_t dim, const cuda::ActivationParams& a,
                            Kernel kernel);

// dx = dy * slope(y) in y's layout, y as bias_act_forward returned it.
at::Tensor bias_act_grad(const at::Tensor& dy, const at::Tensor& y, const cuda::ActivationParams& a,
                         Kernel kernel);

// The synthesis layers' epilogue (sg2/ops/conv_epilogue.h): whether its kernels take x (contiguous
// with NCHW planes, or channels_last with pixels, of whole 16-byte packs, aligned:
// cuda::epilogue_runs_in_lanes); the op aligns the other tensors.
bool epilogue_runs_packed(const at::Tensor& x);

// t as conv_epilogue_runs_fused takes it; y in x's type and layout.
at::Tensor conv_epilogue_forward(const EpilogueTensors& t, const cuda::ActivationParams& a);

// dx (x's layout) and the plane sums through the forward's output y (dy and y are laid out as x);
// without sums_of_x, x's memory is not read and the sums of g * x are 0 (t.x gives the shape only).
EpilogueGradient conv_epilogue_grad(const at::Tensor& dy, const at::Tensor& y, const EpilogueTensors& t,
                                    const cuda::ActivationParams& a, bool sums_of_x = true);

}  // namespace sg2::ops::kernels::gpu
