// Helpers for the import test, reading a parity fixture (../shared/fixtures/*.pt):
//   fixture_images latents FIXTURE.pt OUT.npy   writes in.z as float32 .npy [B, z_dim]
//   fixture_images compare FIXTURE.pt DIR       compares DIR/latentNNNN.png with out.img quantised to
//                                               uint8 as the apps do; fails if a pixel differs by > 1
#include "sg2/data/image_io.h"
#include "sg2/data/npy.h"
#include "sg2/nn/state_dict.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

namespace {

int write_latents(const sg2::nn::TensorMap& fixture, const std::string& out) {
  const at::Tensor z = fixture.at("in.z").to(at::kFloat).contiguous();
  sg2::data::FloatMatrix m{z.size(0), z.size(1), std::vector<float>(z.data_ptr<float>(), z.data_ptr<float>() + z.numel())};
  sg2::data::write_npy_float32(out, m);
  return 0;
}

int compare(const sg2::nn::TensorMap& fixture, const std::string& dir) {
  const at::Tensor expected = sg2::data::to_uint8(fixture.at("out.img").to(at::kFloat), -1, 1);  // [B, C, R, R]
  int64_t max_diff = 0, differing = 0;
  for (int64_t i = 0; i < expected.size(0); ++i) {
    const sg2::data::Image png = sg2::data::read_png(fmt::format("{}/latent{:04d}.png", dir, i));
    const at::Tensor got = at::tensor(std::vector<int64_t>(png.pixels.begin(), png.pixels.end()))
                               .view({png.height, png.width, png.channels}).permute({2, 0, 1});
    const at::Tensor diff = (got - expected[i].to(at::kLong)).abs();
    max_diff = std::max(max_diff, diff.max().item<int64_t>());
    differing += diff.gt(0).sum().item<int64_t>();
  }
  std::cout << fmt::format("{} images: max pixel difference {}, {} of {} pixels differ\n", expected.size(0), max_diff,
                           differing, expected.numel());
  return max_diff <= 1 && differing * 100 <= expected.numel() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: fixture_images latents FIXTURE.pt OUT.npy | compare FIXTURE.pt DIR\n";
    return 2;
  }
  const std::string command = argv[1];
  const sg2::nn::TensorMap fixture = sg2::nn::load_tensor_file(argv[2]);
  return command == "latents" ? write_latents(fixture, argv[3]) : compare(fixture, argv[3]);
}
