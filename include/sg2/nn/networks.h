#pragma once
// The StyleGAN2 networks, module for module as the reference: MappingNetwork, SynthesisBlock,
// SynthesisNetwork, Generator, DiscriminatorBlock, DiscriminatorEpilogue, Discriminator.
// Submodule names (mapping.fc0, synthesis.b8.conv0, b4.fc, ...) reproduce its state_dict keys.

#include "sg2/nn/layers.h"
#include "sg2/nn/options.h"

#include <torch/nn/module.h>

#include <optional>
#include <utility>
#include <vector>

namespace sg2::nn {

class MappingNetwork : public torch::nn::Module {
 public:
  explicit MappingNetwork(const MappingOptions& options);

  struct Run {
    double truncation_psi = 1.0;
    int64_t truncation_cutoff = -1;  // < 0: truncate all ws
    bool update_w_avg = false;       // track the moving average (the reference does so in training)
  };
  // z: [N, z_dim], c: [N, c_dim] -> [N, num_ws, w_dim] (or [N, w_dim] when num_ws = 0)
  at::Tensor forward(const at::Tensor& z, const at::Tensor& c, const Run& run);

  MappingOptions options;
  std::shared_ptr<FullyConnectedLayer> embed;  // only when c_dim > 0
  std::vector<std::shared_ptr<FullyConnectedLayer>> layers;
  at::Tensor w_avg;  // buffer [w_dim], only when tracked
};

class SynthesisBlock : public torch::nn::Module, public UsesCompute {
 public:
  SynthesisBlock(int64_t in_channels, int64_t out_channels, int64_t resolution, bool is_last,
                 const GeneratorOptions& g);
  // x: [N, in, R/2, R/2] or undefined (first block), img: [N, C, R/2, R/2] or undefined,
  // ws: the block's num_conv + num_torgb rows of the network's ws, each [N, w_dim]
  // -> (x [N, out, R, R], img [N, C, R, R])
  std::pair<at::Tensor, at::Tensor> forward(at::Tensor x, at::Tensor img, at::TensorList ws, const SynthesisRun& run);

  int64_t in_channels, resolution, num_conv = 0, num_torgb = 0;
  Architecture architecture;
  at::ScalarType compute_type;  // float32, or the reduced type of mixed precision
  MixedPrecision precision;     // the network's (the layout of the block's activations)
  at::Tensor const_input;  // "const" [out, 4, 4] in the first block
  std::shared_ptr<SynthesisLayer> conv0, conv1;
  std::shared_ptr<ToRGBLayer> torgb;
  std::shared_ptr<Conv2dLayer> skip;
  at::Tensor resample_filter;  // buffer
};

class SynthesisNetwork : public torch::nn::Module {
 public:
  explicit SynthesisNetwork(const GeneratorOptions& g);
  at::Tensor forward(const at::Tensor& ws, const SynthesisRun& run);  // [N, num_ws, w_dim] -> [N, C, R, R]

  int64_t num_ws = 0;
  int64_t w_dim;
  std::vector<std::shared_ptr<SynthesisBlock>> blocks;  // b4, b8, ..., bR
};

class Generator : public torch::nn::Module {
 public:
  explicit Generator(const GeneratorOptions& options);
  // z: [N, z_dim], c: [N, c_dim] -> [N, C, R, R] in about [-1, 1]
  at::Tensor forward(const at::Tensor& z, const at::Tensor& c, const MappingNetwork::Run& mapping_run,
                     const SynthesisRun& synthesis_run);

  GeneratorOptions options;
  std::shared_ptr<SynthesisNetwork> synthesis;
  std::shared_ptr<MappingNetwork> mapping;
};

class DiscriminatorBlock : public torch::nn::Module, public UsesCompute {
 public:
  DiscriminatorBlock(int64_t in_channels, int64_t tmp_channels, int64_t out_channels, int64_t resolution,
                     const DiscriminatorOptions& d);
  // x: [N, in, R, R] or undefined, img: [N, C, R, R] -> (x [N, out, R/2, R/2], img [N, C, R/2, R/2] or undefined)
  std::pair<at::Tensor, at::Tensor> forward(at::Tensor x, at::Tensor img, bool force_fp32 = false);

  int64_t in_channels, resolution;
  Architecture architecture;
  at::ScalarType compute_type;  // float32, or the reduced type of mixed precision
  MixedPrecision precision;     // the network's (the layout of the block's activations)
  std::shared_ptr<Conv2dLayer> fromrgb, conv0, conv1, skip;
  at::Tensor resample_filter;  // buffer
};

class DiscriminatorEpilogue : public torch::nn::Module {
 public:
  DiscriminatorEpilogue(int64_t in_channels, int64_t cmap_dim, const DiscriminatorOptions& d);
  // x: [N, C, 4, 4], img: [N, C_img, 4, 4] (skip only), cmap: [N, cmap_dim] -> [N, 1]
  at::Tensor forward(const at::Tensor& x, const at::Tensor& img, const at::Tensor& cmap);

  int64_t cmap_dim;
  int64_t mbstd_group_size, mbstd_num_channels;
  Architecture architecture;
  std::shared_ptr<Conv2dLayer> fromrgb, conv;
  std::shared_ptr<FullyConnectedLayer> fc, out;
};

class Discriminator : public torch::nn::Module {
 public:
  explicit Discriminator(const DiscriminatorOptions& options);
  // [N, C, R, R], [N, c_dim] -> [N, 1] float32; force_fp32 ignores the options' mixed precision.
  at::Tensor forward(const at::Tensor& img, const at::Tensor& c, bool force_fp32 = false);

  // The logits of two batches of N images in one pass of 2N (the main phase's fakes and reals: half
  // the launches, twice the work per kernel), each the same as forward(a, ca) and forward(b, cb)
  // up to rounding: the only op that mixes samples, the minibatch standard deviation, gets the
  // same groups, each within one batch. Empty where no pass of 2N keeps them (a group size of the
  // whole batch, or larger than N) or the batches differ in size or type.
  std::optional<std::pair<at::Tensor, at::Tensor>> forward_pair(const at::Tensor& a, const at::Tensor& ca,
                                                                 const at::Tensor& b, const at::Tensor& cb);

  DiscriminatorOptions options;
  std::vector<std::shared_ptr<DiscriminatorBlock>> blocks;  // bR, ..., b8
  std::shared_ptr<MappingNetwork> mapping;                  // only when c_dim > 0
  std::shared_ptr<DiscriminatorEpilogue> epilogue;          // "b4"
};

}  // namespace sg2::nn
