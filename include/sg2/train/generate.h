#pragma once
// Image generation from a snapshot's G_ema: one PNG per seed and a grid. Latents for a seed are
// numpy.random.RandomState(seed).randn(z_dim), as in NVIDIA's generate.py, so the same seed gives
// the same latent for the same network.

#include "sg2/nn/options.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace sg2::train {

struct GenerateOptions {
  std::string network;              // snapshot file
  std::string which = "G_ema";      // G_ema or G
  std::vector<int64_t> seeds;
  double truncation_psi = 1.0;
  int64_t truncation_cutoff = -1;   // < 0: all layers
  nn::NoiseMode noise_mode = nn::NoiseMode::Const;
  int64_t class_index = -1;         // conditional networks: the class to render
  std::string outdir = "out";
  std::string device = "auto";
  int64_t batch = 16;
};

// [seeds, z_dim] float32 latents, numpy-compatible.
at::Tensor latents_for_seeds(const std::vector<int64_t>& seeds, int64_t z_dim);

// Renders every seed; returns the written file paths (per-seed PNGs, then grid.png).
std::vector<std::string> generate_images(const GenerateOptions& options);

}  // namespace sg2::train
