#pragma once
// Layers with equalized learning rate: weights are stored as N(0, 1) / lr_multiplier and scaled at
// run time by lr_multiplier / sqrt(fan_in), so Adam sees the same dynamic range everywhere.
// Parameter and buffer names follow the reference (weight, bias, affine, noise_const, ...).

#include "sg2/ops/ops.h"
#include "sg2/nn/options.h"

#include <torch/nn/module.h>

namespace sg2::nn {

// A module whose forward calls the ops: it passes them its network's compute settings.
struct UsesCompute {
  ops::ComputeSettings compute;
  virtual ~UsesCompute() = default;
};

// Gives every module of `network` that calls the ops these settings (a new network computes as
// ops::ComputeSettings' defaults say); the run's, or a test's.
void set_compute(torch::nn::Module& network, const ops::ComputeSettings& compute);

struct FcOptions {
  bool bias = true;
  ops::Activation activation = ops::Activation::Linear;
  double lr_multiplier = 1.0;
  double bias_init = 0.0;
};

class FullyConnectedLayer : public torch::nn::Module, public UsesCompute {
 public:
  FullyConnectedLayer(int64_t in_features, int64_t out_features, const FcOptions& options = {});
  at::Tensor forward(const at::Tensor& x);  // [N, in] -> [N, out]

  at::Tensor weight;  // [out, in]
  at::Tensor bias;    // [out] or undefined
  double weight_gain;
  double bias_gain;
  ops::Activation activation;
};

struct ConvOptions {
  bool bias = true;
  ops::Activation activation = ops::Activation::Linear;
  int64_t up = 1;
  int64_t down = 1;
  std::vector<float> resample_filter{1, 3, 3, 1};
  double conv_clamp = -1;
};

class Conv2dLayer : public torch::nn::Module, public UsesCompute {
 public:
  Conv2dLayer(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const ConvOptions& options = {});
  at::Tensor forward(const at::Tensor& x, double gain = 1.0);  // [N, I, H, W] -> [N, O, H*up/down, W*up/down]

  at::Tensor weight;           // [O, I, k, k]
  at::Tensor bias;             // [O] or undefined
  at::Tensor resample_filter;  // buffer [4, 4]
  ConvOptions options;
  int64_t padding;
  double weight_gain;
};

struct SynthesisLayerOptions {
  int64_t kernel_size = 3;
  int64_t up = 1;
  bool use_noise = true;
  ops::Activation activation = ops::Activation::LRelu;
  std::vector<float> resample_filter{1, 3, 3, 1};
  double conv_clamp = -1;
};

// How the synthesis network runs: noise source and modulated-convolution strategy.
struct SynthesisRun {
  NoiseMode noise_mode = NoiseMode::Random;
  bool fused_modconv = false;
  bool force_fp32 = false;                 // ignore the options' mixed precision
  c10::optional<at::Generator> rng;  // for random noise; LibTorch's default generator if none
};

// A private random generator of the device's kind, seeded (for reproducible noise and latents).
at::Generator make_rng(const at::Device& device, uint64_t seed);

// Modulated 3x3 convolution + noise + bias + lrelu.
class SynthesisLayer : public torch::nn::Module, public UsesCompute {
 public:
  SynthesisLayer(int64_t in_channels, int64_t out_channels, int64_t w_dim, int64_t resolution,
                 const SynthesisLayerOptions& options = {});
  // x: [N, I, R/up, R/up], w: [N, w_dim] -> [N, O, R, R]
  at::Tensor forward(const at::Tensor& x, const at::Tensor& w, const SynthesisRun& run, double gain = 1.0);

  std::shared_ptr<FullyConnectedLayer> affine;
  at::Tensor weight;           // [O, I, k, k]
  at::Tensor noise_strength;   // []
  at::Tensor bias;             // [O]
  at::Tensor resample_filter;  // buffer
  at::Tensor noise_const;      // buffer [R, R]
  SynthesisLayerOptions options;
  int64_t resolution;
};

// Modulated 1x1 convolution to image channels, without demodulation.
class ToRGBLayer : public torch::nn::Module, public UsesCompute {
 public:
  ToRGBLayer(int64_t in_channels, int64_t out_channels, int64_t w_dim, double conv_clamp = -1);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& w, bool fused_modconv);  // -> [N, C_img, R, R]

  std::shared_ptr<FullyConnectedLayer> affine;
  at::Tensor weight;  // [C_img, I, 1, 1]
  at::Tensor bias;    // [C_img]
  double weight_gain;
  double conv_clamp;
};

}  // namespace sg2::nn
