#include "sg2/nn/layers.h"

#include "sg2/core/error.h"

#include <cmath>

namespace sg2::nn {

at::Generator make_rng(const at::Device& device, uint64_t seed) {
  at::Generator rng = at::globalContext().defaultGenerator(device).clone();
  std::lock_guard<std::mutex> lock(rng.mutex());
  rng.set_current_seed(seed);
  return rng;
}

void set_compute(torch::nn::Module& network, const ops::ComputeSettings& compute) {
  network.apply([&compute](torch::nn::Module& module) {
    if (auto* user = dynamic_cast<UsesCompute*>(&module)) user->compute = compute;
  });
}

FullyConnectedLayer::FullyConnectedLayer(int64_t in_features, int64_t out_features, const FcOptions& o)
    : weight_gain(o.lr_multiplier / std::sqrt(static_cast<double>(in_features))),
      bias_gain(o.lr_multiplier),
      activation(o.activation) {
  weight = register_parameter("weight", at::randn({out_features, in_features}) / o.lr_multiplier);
  if (o.bias) bias = register_parameter("bias", at::full({out_features}, o.bias_init));
}

at::Tensor FullyConnectedLayer::forward(const at::Tensor& x) {
  at::Tensor w = weight.to(x.scalar_type()) * weight_gain;
  at::Tensor b = bias;
  if (b.defined()) {
    b = b.to(x.scalar_type());
    if (bias_gain != 1.0) b = b * bias_gain;
  }
  if (activation == ops::Activation::Linear && b.defined()) return at::addmm(b.unsqueeze(0), x, w.t());
  ops::BiasActParams p;
  p.act = activation;
  return ops::bias_act(x.matmul(w.t()), b, p, compute);
}

Conv2dLayer::Conv2dLayer(int64_t in_channels, int64_t out_channels, int64_t kernel_size, const ConvOptions& o)
    : options(o),
      padding(kernel_size / 2),
      weight_gain(1.0 / std::sqrt(static_cast<double>(in_channels * kernel_size * kernel_size))) {
  weight = register_parameter("weight", at::randn({out_channels, in_channels, kernel_size, kernel_size}));
  if (o.bias) bias = register_parameter("bias", at::zeros({out_channels}));
  resample_filter = register_buffer("resample_filter", ops::setup_filter(o.resample_filter));
}

at::Tensor Conv2dLayer::forward(const at::Tensor& x, double gain) {
  at::Tensor w = weight * weight_gain;
  ops::ConvResampleParams conv;
  conv.up = options.up;
  conv.down = options.down;
  conv.padding = {padding, padding, padding, padding};
  conv.flip_weight = (options.up == 1);
  at::Tensor y = ops::conv2d_resample(x, ops::weight_for(w, x), resample_filter, conv, compute);

  ops::BiasActParams p;
  p.act = options.activation;
  p.gain = ops::default_gain(options.activation) * gain;
  p.clamp = options.conv_clamp >= 0 ? options.conv_clamp * gain : -1;
  return ops::bias_act(y, bias.defined() ? bias.to(y.scalar_type()) : bias, p, compute);
}

SynthesisLayer::SynthesisLayer(int64_t in_channels, int64_t out_channels, int64_t w_dim, int64_t resolution_,
                               const SynthesisLayerOptions& o)
    : options(o), resolution(resolution_) {
  resample_filter = register_buffer("resample_filter", ops::setup_filter(o.resample_filter));  // before noise_const
  FcOptions affine_options;
  affine_options.bias_init = 1.0;
  affine = register_module("affine", std::make_shared<FullyConnectedLayer>(w_dim, in_channels, affine_options));
  weight = register_parameter("weight", at::randn({out_channels, in_channels, o.kernel_size, o.kernel_size}));
  if (o.use_noise) {
    noise_const = register_buffer("noise_const", at::randn({resolution, resolution}));
    noise_strength = register_parameter("noise_strength", at::zeros({}));
  }
  bias = register_parameter("bias", at::zeros({out_channels}));
}

at::Tensor SynthesisLayer::forward(const at::Tensor& x, const at::Tensor& w, const SynthesisRun& run, double gain) {
  const int64_t in_resolution = resolution / options.up;
  SG2_CHECK(x.size(1) == weight.size(1) && x.size(2) == in_resolution && x.size(3) == in_resolution,
            "SynthesisLayer at {}x{}: input {} does not match [N, {}, {}, {}]", resolution, resolution, x.sizes(),
            weight.size(1), in_resolution, in_resolution);
  at::Tensor styles = affine->forward(w);  // [N, I]

  // The noise before its strength: drawn in float32 whatever x's type, as the reference (the same
  // draws with or without mixed precision); [1, 1, H, W] for the constant noise.
  at::Tensor noise;
  if (options.use_noise && run.noise_mode == NoiseMode::Random) {
    noise = at::randn({x.size(0), 1, resolution, resolution}, run.rng, x.options().dtype(at::kFloat));
  }
  if (options.use_noise && run.noise_mode == NoiseMode::Const) {
    noise = noise_const.reshape({1, 1, resolution, resolution});
  }

  ops::ModConvParams mc;
  mc.up = options.up;
  mc.padding = options.kernel_size / 2;
  mc.flip_weight = (options.up == 1);
  mc.fused = run.fused_modconv;
  ops::BiasActParams p;
  p.act = options.activation;
  p.gain = ops::default_gain(options.activation) * gain;
  p.clamp = options.conv_clamp >= 0 ? options.conv_clamp * gain : -1;
  if (!mc.fused) {
    const ops::ModulatedConvParts conv = ops::modulated_conv2d_parts(x, weight, styles, resample_filter, mc, compute);
    return ops::demodulate_noise_bias_act(conv.y, conv.demod, noise, noise.defined() ? noise_strength : at::Tensor(),
                                          bias, p, compute);
  }
  if (noise.defined()) noise = noise * noise_strength;
  at::Tensor y = ops::modulated_conv2d(x, weight, styles, noise, resample_filter, mc, compute);
  return ops::bias_act(y, bias.to(y.scalar_type()), p, compute);
}

ToRGBLayer::ToRGBLayer(int64_t in_channels, int64_t out_channels, int64_t w_dim, double conv_clamp_)
    : weight_gain(1.0 / std::sqrt(static_cast<double>(in_channels))), conv_clamp(conv_clamp_) {
  FcOptions affine_options;
  affine_options.bias_init = 1.0;
  affine = register_module("affine", std::make_shared<FullyConnectedLayer>(w_dim, in_channels, affine_options));
  weight = register_parameter("weight", at::randn({out_channels, in_channels, 1, 1}));
  bias = register_parameter("bias", at::zeros({out_channels}));
}

at::Tensor ToRGBLayer::forward(const at::Tensor& x, const at::Tensor& w, bool fused_modconv) {
  at::Tensor styles = affine->forward(w) * weight_gain;  // [N, I]
  ops::ModConvParams mc;
  mc.demodulate = false;
  mc.fused = fused_modconv;
  at::Tensor y = ops::modulated_conv2d(x, weight, styles, at::Tensor(), at::Tensor(), mc, compute);
  ops::BiasActParams p;
  p.clamp = conv_clamp;
  return ops::bias_act(y, bias.to(y.scalar_type()), p, compute);
}

}  // namespace sg2::nn
