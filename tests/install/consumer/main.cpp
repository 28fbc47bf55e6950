// Renders a few images with a small generator of the installed library's networks and checks
// their shape and range: what a project using stylegan2-cpp as a library does first.
#include "sg2/nn/networks.h"

#include <ATen/ATen.h>

#include <iostream>

int main() {
  sg2::nn::GeneratorOptions options;
  options.z_dim = options.w_dim = 16;
  options.mapping_layers = 2;
  options.img_resolution = 16;
  options.img_channels = 3;
  options.channel_base = 128;
  options.channel_max = 16;
  at::manual_seed(0);
  sg2::nn::Generator G(options);
  const at::Tensor z = at::randn({2, options.z_dim});
  const at::Tensor images = G.forward(z, at::Tensor(), {}, {});  // [2, 3, 16, 16]
  std::cout << "images " << images.sizes() << ", mean " << images.mean().item<double>() << "\n";
  const bool ok = images.sizes() == at::IntArrayRef({2, 3, 16, 16}) && images.isfinite().all().item<bool>();
  return ok ? 0 : 1;
}
