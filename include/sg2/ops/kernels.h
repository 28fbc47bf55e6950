#pragma once
// Hand-written kernels for the memory-bound StyleGAN2 ops, each beside its reference:
// upfirdn2d (sg2/ops/upfirdn2d.h), bias_act (sg2/ops/bias_act.h) and the synthesis epilogue
// (sg2/ops/conv_epilogue.h). Each op's file holds its reference, its autograd function and the
// choice between them; the raw kernels are per device: src/ops/*_cpu.cpp (float32, compiled once
// per CPU level) and src/ops/cuda/ (float32, float16 and bfloat16; built when LibTorch has CUDA and
// the toolkit is found). Tested against the references in tests/unit/ops.

#include "sg2/ops/compute_settings.h"
#include "sg2/ops/kernel.h"

#include <ATen/core/Tensor.h>

namespace sg2::ops::kernels {

// Whether the kernels handle these tensors (float32 on the CPU; float32, float16 or bfloat16 on
// CUDA where the CUDA kernels are built).
bool supported(const at::Tensor& x);

// Whether an op called with `kernel` runs a kernel on x (any choice but Reference, where supported).
bool runs_kernel(Kernel kernel, const at::Tensor& x);

// Whether this build has the CUDA kernels.
bool cuda_kernels_built();

}  // namespace sg2::ops::kernels
