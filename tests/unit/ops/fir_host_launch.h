#pragma once
// The CUDA kernels' upfirdn2d arithmetic run on the host over whole tensors (the functions of
// src/ops/cuda/*_elements.h, as the GPU runs them), for the tests of the generic, tiled and lanes
// kernels.
#include "sg2/ops/kernels.h"
#include "sg2/ops/ops.h"
#include "cuda/fir_bias_act_elements.h"
#include "cuda/kernels_cuda.h"

#include <ATen/ATen.h>

namespace sg2::ops::test {

// Every output element of the kernel's arithmetic, computed on the host with Index offsets, in the
// output's memory order.
template <typename Index>
at::Tensor upfirdn2d_by_elements(const at::Tensor& x, const at::Tensor& f_in, const ops::FirParams& p) {
  const at::Tensor f = f_in.contiguous();
  const auto [out_h, out_w] = kernels::upfirdn2d_output_size(x, f, p);
  const cuda::FirLaunch job = kernels::gpu::fir_launch(x, f, p, out_h, out_w);
  at::Tensor y = at::empty({job.batch, job.channels, job.out_h, job.out_w},
                           at::TensorOptions().memory_format(ops::layout_of(x)));
  const float* px = x.data_ptr<float>();
  float* py = y.data_ptr<float>();
  for (Index i = 0; i < static_cast<Index>(y.numel()); ++i) {
    py[i] = cuda::upfirdn2d_element<Index>(job, i, [px](Index offset) { return px[offset]; });
  }
  return y;
}

}  // namespace sg2::ops::test
