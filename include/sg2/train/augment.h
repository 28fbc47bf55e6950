#pragma once
// The augmentation pipeline of adaptive discriminator augmentation (reference: training/augment.py
// of stylegan2-ada-pytorch, "Training Generative Adversarial Networks with Limited Data"): every
// op of its pipelines, with its probabilities, strengths and order, its padded and upsampled
// geometric transform through the sym6 wavelet filter, and its image-space filter bank. Each op
// applies to an image with probability p times the op's multiplier; p is the caller's (adaptive in
// training). Differentiable to any order through the images (R1 and path length differentiate the
// images' gradient again): the geometric transform samples through ops::grid_sample.

#include "sg2/core/enum_names.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <array>
#include <string>

namespace sg2::train {

// The reference's AugmentPipe arguments: a probability multiplier per op (0: off) and each op's
// strength, as the reference names and defaults them.
struct AugmentOptions {
  // Pixel blitting.
  double xflip = 0, rotate90 = 0, xint = 0, xint_max = 0.125;
  // General geometric transformations.
  double scale = 0, rotate = 0, aniso = 0, xfrac = 0;
  double scale_std = 0.2, rotate_max = 1, aniso_std = 0.2, xfrac_std = 0.125;
  // Color transformations.
  double brightness = 0, contrast = 0, lumaflip = 0, hue = 0, saturation = 0;
  double brightness_std = 0.2, contrast_std = 0.5, hue_max = 1, saturation_std = 1;
  // Image-space filtering.
  double imgfilter = 0;
  std::array<double, 4> imgfilter_bands{1, 1, 1, 1};
  double imgfilter_std = 1;
  // Image-space corruptions.
  double noise = 0, cutout = 0, noise_std = 0.1, cutout_size = 0.5;
};

// The reference's named pipelines (train.py's --augpipe): blit, geom, color, filter, noise, cutout,
// bg, bgc (its default), bgcf, bgcfn, bgcfnc; another name fails naming them.
AugmentOptions augment_pipeline(const std::string& name);

// Where the pipeline's random numbers come from, in the order it draws them: uniform in [0, 1) and
// standard normal, float32 on `device`.
class AugmentDraws {
 public:
  virtual ~AugmentDraws() = default;
  virtual at::Tensor rand(at::IntArrayRef shape, const at::Device& device) = 0;
  virtual at::Tensor randn(at::IntArrayRef shape, const at::Device& device) = 0;
};

// Draws from a generator (training's: seeded per rank).
class GeneratorDraws : public AugmentDraws {
 public:
  explicit GeneratorDraws(at::Generator generator) : generator_(std::move(generator)) {}
  at::Tensor rand(at::IntArrayRef shape, const at::Device& device) override;
  at::Tensor randn(at::IntArrayRef shape, const at::Device& device) override;

 private:
  at::Generator generator_;
};

// A module for its filters, buffers under the reference's names (Hz_geom, Hz_fbank): to() moves
// them with the networks, once.
class AugmentPipe : public torch::nn::Module {
 public:
  explicit AugmentPipe(const AugmentOptions& options);

  // images [N, C, H, W] float32 on the pipeline's device (C: 1 or 3; geometric ops and the filter
  // need H and W above the filters' reach) -> the same shape, each op applied with probability p
  // times its multiplier.
  at::Tensor operator()(const at::Tensor& images, double p, AugmentDraws& draws) const;
  // The same with p a float32 scalar tensor on the images' device (training's: no host sync).
  at::Tensor operator()(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const;

  const AugmentOptions& options() const { return options_; }

 private:
  // The pipeline's stages, in the reference's order; each returns its images.
  at::Tensor geometric(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const;
  at::Tensor color(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const;
  at::Tensor image_filter(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const;
  at::Tensor corruptions(const at::Tensor& images, const at::Tensor& p, AugmentDraws& draws) const;

  AugmentOptions options_;
  at::Tensor geometric_filter_;  // [12, 12]: the sym6 wavelet's low-pass, outer product
  at::Tensor filter_bank_;       // [4, 43]: the image filter's band-pass filters (float32)
};

}  // namespace sg2::train
