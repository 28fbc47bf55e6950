#pragma once
// stylegan2_bench fir: times upfirdn2d at the shapes a preset's networks run it at its highest
// resolution (G's filter after the 2x transposed convolution, D's filter before its strided one,
// D's 2x downsampling, G's 2x upsampling of the image, and the gradients of the first three), in
// both layouts: the tiled CUDA kernel, the generic one and the reference op (LibTorch's depthwise
// convolution), with each one's effective bandwidth against a device copy's. On the CPU: the CPU
// kernel and the reference op.

#include "sg2/train/config.h"

#include <string>

namespace sg2::cli {

struct FirBenchOptions {
  int64_t batch = 32;
  int64_t resolution = 256;
  std::string dtype = "auto";  // auto: float16 on CUDA (the highest resolutions' type), float32 on the CPU
  int repeats = 20;            // calls per timing; the best of three timings counts
};

// The table (markdown) for config's G and D channels on its run.device.
std::string run_fir_benchmark(const train::TrainConfig& config, const FirBenchOptions& options);

}  // namespace sg2::cli
