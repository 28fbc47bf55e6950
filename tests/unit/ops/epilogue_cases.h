#pragma once
// The synthesis layers' epilogue (sg2/ops/conv_epilogue.h) as its tests run it: the cases (shapes,
// noise, bias, activation, clamp), their random inputs in either layout, and the op on them. For
// test_conv_epilogue.cpp (the op and its kernels) and test_conv_epilogue_host_kernels.cpp (the
// CUDA kernels' arithmetic run on the host).

#include "sg2/ops/conv_epilogue.h"
#include "sg2/ops/ops.h"

#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

namespace sg2::ops::test {

struct EpilogueCase {
  std::string name;
  std::vector<int64_t> x_shape;
  int64_t noise_batch;  // 0: no noise
  bool bias;
  ops::Activation act;
  double clamp;
};

// Planes of 25 (no whole number of vectors or packs), 64 (partial sums only), 256 (more packs than
// a warp has lanes), 1024 (channels_last on a GPU: several blocks a sample), 1600 (channels_last:
// more pixels than the CPU's runs) and 1 (channels_last and contiguous at once: runs as NCHW);
// per-sample noise, one plane for the batch, none; 3 and 2 channels (no whole packs of channels), 4
// (one float32 pack), 8, 16 and 64 (whole packs in every precision) and 24 (packs of 8 or 4 that
// leave threads of a channels_last gradient block idle).
inline std::vector<EpilogueCase> epilogue_cases() {
  return {{"lrelu, clamp, per-sample noise, 5x5", {2, 3, 5, 5}, 2, true, ops::Activation::LRelu, 1.5},
          {"lrelu, one noise plane, 8x8", {3, 4, 8, 8}, 1, true, ops::Activation::LRelu, -1},
          {"linear, no noise, no bias, 4x4", {2, 2, 4, 4}, 0, false, ops::Activation::Linear, -1},
          {"relu, clamp, 16x16", {2, 2, 16, 16}, 2, true, ops::Activation::Relu, 2.0},
          {"lrelu, clamp, per-sample noise, 16 channels, 5x5", {2, 16, 5, 5}, 2, true, ops::Activation::LRelu, 1.5},
          {"linear, no noise, no bias, 8 channels, 3x3", {3, 8, 3, 3}, 0, false, ops::Activation::Linear, -1},
          {"lrelu, per-sample noise, 8 channels, 40x40", {2, 8, 40, 40}, 2, true, ops::Activation::LRelu, -1},
          {"lrelu, clamp, one noise plane, 24 channels, 6x6", {2, 24, 6, 6}, 1, true, ops::Activation::LRelu, 1.0},
          {"lrelu, per-sample noise, 64 channels, 32x32", {2, 64, 32, 32}, 2, true, ops::Activation::LRelu, -1},
          {"relu, per-sample noise, 8 channels, 1x1", {3, 8, 1, 1}, 3, true, ops::Activation::Relu, -1}};
}

inline constexpr at::MemoryFormat kLayouts[] = {at::MemoryFormat::Contiguous, at::MemoryFormat::ChannelsLast};

inline std::string layout_name(at::MemoryFormat layout) {
  return layout == at::MemoryFormat::ChannelsLast ? "channels_last" : "NCHW";
}

inline std::vector<std::pair<EpilogueCase, at::MemoryFormat>> cases_in_both_layouts() {
  std::vector<std::pair<EpilogueCase, at::MemoryFormat>> out;
  for (const EpilogueCase& c : epilogue_cases()) {
    for (const at::MemoryFormat layout : kLayouts) out.emplace_back(c, layout);
  }
  return out;
}

inline ops::BiasActParams params_of(const EpilogueCase& c) {
  ops::BiasActParams p;
  p.act = c.act;
  p.clamp = c.clamp;
  return p;
}

// The op's inputs: x in `type` on `device`, the rest float32 as the layers hold them.
struct EpilogueInputs {
  at::Tensor x, demod, noise, noise_strength, bias;
};

inline EpilogueInputs random_inputs(const EpilogueCase& c, at::ScalarType type, at::Device device,
                             at::MemoryFormat layout = at::MemoryFormat::Contiguous) {
  at::manual_seed(21);
  const int64_t n = c.x_shape[0], channels = c.x_shape[1];
  const at::TensorOptions floats = at::TensorOptions().device(device);
  EpilogueInputs in;
  in.x = at::randn(c.x_shape).to(device, type).contiguous(layout);
  in.demod = (at::rand({n, channels}) + 0.5).to(floats);
  if (c.noise_batch > 0) {
    in.noise = at::randn({c.noise_batch, 1, c.x_shape[2], c.x_shape[3]}).to(floats);
    in.noise_strength = at::tensor(0.7f).to(floats);
  }
  if (c.bias) in.bias = at::randn({channels}).to(floats);
  return in;
}

// The inputs that take gradients, as leaves of their own.
inline std::vector<at::Tensor> leaves(const EpilogueInputs& in) {
  std::vector<at::Tensor> out{in.x.detach().clone().requires_grad_(true), in.demod.detach().clone().requires_grad_(true)};
  if (in.noise_strength.defined()) out.push_back(in.noise_strength.detach().clone().requires_grad_(true));
  if (in.bias.defined()) out.push_back(in.bias.detach().clone().requires_grad_(true));
  return out;
}

inline at::Tensor run_op(const EpilogueCase& c, const EpilogueInputs& in, const std::vector<at::Tensor>& v, ops::Kernel impl) {
  const at::Tensor strength = in.noise_strength.defined() ? v[2] : at::Tensor();
  const at::Tensor bias = in.bias.defined() ? v.back() : at::Tensor();
  return ops::demodulate_noise_bias_act(v[0], v[1], in.noise, strength, bias, params_of(c), impl);
}

}  // namespace sg2::ops::test
