#pragma once
// Image generation from a snapshot (reference: generate.py, style_mixing.py, gen_video.py): one PNG
// per seed and a grid; style-mixing figures (rows x columns of seeds); latent interpolation frames.
// Latents for a seed are numpy.random.RandomState(seed).randn(z_dim), as in NVIDIA's scripts, so the
// same seed gives the same latent for the same network; --latents FILE.npy gives them directly.

#include "sg2/nn/options.h"
#include "sg2/train/config.h"

#include <ATen/ATen.h>
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sg2::cli {

struct GenerateOptions {
  std::string network;              // snapshot file
  std::string which = "G_ema";      // G_ema or G
  std::vector<int64_t> seeds;       // images, interpolation key frames; style mixing: rows
  std::string latents_file;         // .npy float32 [N, z_dim] instead of seeds (images mode)
  double truncation_psi = 1.0;
  int64_t truncation_cutoff = -1;   // < 0: all layers
  nn::NoiseMode noise_mode = nn::NoiseMode::Const;
  int64_t class_index = -1;         // conditional networks: the class to render
  std::string outdir = "out";
  train::DeviceChoice device = train::DeviceChoice::Auto;
  int64_t batch = 16;
  // Style mixing: rows = seeds, columns = these seeds; the columns' ws at these layer indices replace the rows'.
  std::vector<int64_t> mix_columns;
  std::vector<int64_t> mix_styles;  // empty: 0-6 (the reference's coarse + middle styles), clipped to num_ws
  int64_t interpolation_frames = 0; // > 0: frames between consecutive seeds, interpolated linearly in W
  bool overwrite = false;           // replace files of an earlier run in outdir (else refused)
};

// [seeds, z_dim] float32 latents, numpy-compatible.
at::Tensor latents_for_seeds(const std::vector<int64_t>& seeds, int64_t z_dim);

// Images mode: one PNG per seed (seedNNNN.png) or latent (latentNNNN.png), then grid.png.
// Style mixing (mix_columns set): stylemix.png with the column images on top and the row images on
// the left. Interpolation (interpolation_frames > 0): frameNNNNN.png. Returns the written paths. A
// file that exists already is refused, before anything renders, unless options.overwrite.
std::vector<std::string> generate_images(const GenerateOptions& options);

// stylegan2_generate: its command line (seeds, latents, style mixing, interpolation) into
// GenerateOptions, then generate_images; run() prints what it wrote.
class GenerateCommand {
 public:
  void add_to(CLI::App& app);
  int run();

 private:
  GenerateOptions options_;
  std::string seeds_ = "0-63", noise_mode_ = "const", columns_, styles_, device_ = "auto";
};

}  // namespace sg2::cli
