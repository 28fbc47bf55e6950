#pragma once
// Which implementation runs an op (ComputeSettings::kernel, compute_settings.h): the reference's
// `impl` argument of torch_utils/ops ('cuda' or 'ref'), with each CUDA kernel named. Plain C++: the
// CUDA launchers (src/ops/cuda/fir_bias_act_kernels.h, compiled by nvcc) take it too.

namespace sg2::ops {

// - Auto: the fastest kernel built for the call's device, type and layout (kernels.h); the reference
//   where none takes the tensors. On the CPU each op has one kernel (float32). On CUDA, upfirdn2d
//   runs ChannelLanes where channels_last memory of whole aligned 16-byte lanes allows, else Tiled
//   where its filter size and resampling are built, else PerElement; bias_act runs 16-byte packs
//   where the memory is whole aligned packs, else one element a thread; the synthesis epilogue runs
//   its fused kernels where they take the tensors.
// - Reference: the plain composition of LibTorch ops that defines what the op computes.
// - ChannelLanes: upfirdn2d's tiled kernel in 16-byte lanes of channels (channels_last only).
// - Tiled: upfirdn2d's tiled kernel, one output element a thread, its taps fixed at compile time.
// - PerElement: the generic kernels, one thread an output element, any filter and resampling.
// The last three name one CUDA kernel each (the op benchmark and the tests compare them); an op
// that has no such kernel for its arguments runs Auto's choice, bias_act runs packed under
// ChannelLanes and Tiled, and the synthesis epilogue runs composed of bias_act under any of them.
enum class Kernel { Auto, Reference, ChannelLanes, Tiled, PerElement };

}  // namespace sg2::ops
