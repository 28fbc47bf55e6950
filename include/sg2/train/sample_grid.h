#pragma once
// The sample grid of a run (reference: setup_snapshot_image_grid): a fixed set of real images,
// latents and labels, written as reals.png once and rendered by G_ema as fakes*.png every few ticks.

#include "sg2/data/dataset.h"
#include "sg2/nn/networks.h"

#include "sg2/data/image_io.h"

#include <ATen/ATen.h>

namespace sg2::train {

struct SampleGrid {
  int64_t width = 0, height = 0;  // images per row / column
  at::Tensor reals;               // [N, C, H, W] uint8 (CPU)
  at::Tensor z;                   // [N, z_dim] on the device
  at::Tensor c;                   // [N, c_dim] on the device
};

// Unlabelled data: a seeded random subset. Labelled: one label per row, cycling through labels.
SampleGrid setup_sample_grid(const data::Dataset& dataset, int64_t grid_w, int64_t grid_h, int64_t z_dim,
                             uint64_t seed, const at::Device& device);

// G(z, c) with constant noise, in chunks of `batch`, as uint8 [N, C, H, W] on the CPU.
at::Tensor render_grid(nn::Generator& G, const SampleGrid& grid, int64_t batch, bool fused_modconv);

data::Image save_grid_png(const at::Tensor& images_uint8, const SampleGrid& grid, const std::string& path);

}  // namespace sg2::train
