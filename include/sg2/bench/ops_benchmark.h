#pragma once
// stylegan2_bench ops: times the hand-written kernels at the shapes a preset's networks run them at
// one resolution, in both layouts, each against a device copy's bandwidth:
// - upfirdn2d: G's filter after the 2x transposed convolution, D's filter before its strided one,
//   D's 2x downsampling, G's 2x upsampling of the image, and the gradients of the first three; the
//   tiled CUDA kernel, the generic one and the reference op (LibTorch's depthwise convolution).
// - bias_act: G's and D's convolution outputs (lrelu) and G's toRGB output (linear), and the
//   gradients of the first two through their outputs; the CUDA kernel in 16-byte packs, the
//   per-element one and the reference ops (LibTorch's elementwise ops, autograd's for the gradient).
// On the CPU: the CPU kernels and the reference ops.

#include "sg2/train/config.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sg2::bench {

struct OpsBenchOptions {
  int64_t batch = 32;
  int64_t resolution = 256;
  std::string dtype = "auto";  // auto: float16 on CUDA (the highest resolutions' type), float32 on the CPU
  int repeats = 20;            // calls per timing; the best of three timings counts
};

// The tables for people (markdown) and one JSON record a row for scripts (stylegan2_bench ops
// --jsonl): {"kind": "ops", "table", "op", "x", "layout", "dtype", "device", "seconds": {column:
// seconds or null}, ...; the kernel tables "bytes" and "floor_s", the float32 convolutions' "w",
// "flops" and "relative_error": {arithmetic: error}}.
struct OpsBenchResult {
  std::string text;
  std::vector<nlohmann::json> records;
};

// The tables of config's G and D channels on its run.device, under LibTorch's settings as the
// caller set them for config (`compute` says which, in words).
OpsBenchResult run_ops_benchmark(const train::TrainConfig& config, const OpsBenchOptions& options,
                                 const std::string& compute);

}  // namespace sg2::bench
