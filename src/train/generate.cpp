#include "sg2/train/generate.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"
#include "sg2/data/image_io.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/trainer.h"

#include <cmath>
#include <filesystem>

namespace sg2::train {

at::Tensor latents_for_seeds(const std::vector<int64_t>& seeds, int64_t z_dim) {
  at::Tensor z = at::empty({static_cast<int64_t>(seeds.size()), z_dim}, at::kDouble);
  double* out = z.data_ptr<double>();
  for (size_t i = 0; i < seeds.size(); ++i) {
    SG2_CHECK(seeds[i] >= 0 && seeds[i] <= 0xffffffffLL, "seed {} is outside [0, 2^32 - 1]", seeds[i]);
    NumpyRandomState random(static_cast<uint32_t>(seeds[i]));
    for (int64_t j = 0; j < z_dim; ++j) out[static_cast<int64_t>(i) * z_dim + j] = random.standard_normal();
  }
  return z.to(at::kFloat);
}

namespace {

at::Tensor labels_for(const nn::Generator& G, int64_t class_index, int64_t count) {
  const int64_t c_dim = G.options.c_dim;
  if (c_dim == 0) {
    SG2_CHECK(class_index < 0, "--class {} given, but the network is unconditional", class_index);
    return at::zeros({count, 0});
  }
  SG2_CHECK(class_index >= 0 && class_index < c_dim, "the network is conditional: pass --class 0..{}", c_dim - 1);
  at::Tensor c = at::zeros({count, c_dim});
  c.select(1, class_index).fill_(1.0);
  return c;
}

}  // namespace

std::vector<std::string> generate_images(const GenerateOptions& o) {
  SG2_CHECK(!o.seeds.empty(), "no seeds to render");
  const at::Device device = resolve_device(o.device);
  const Snapshot snapshot = load_snapshot(o.network);
  auto G = load_generator(snapshot, o.which);
  G->to(device);
  G->eval();
  std::filesystem::create_directories(o.outdir);

  const auto count = static_cast<int64_t>(o.seeds.size());
  const at::Tensor z = latents_for_seeds(o.seeds, G->options.z_dim).to(device);
  const at::Tensor c = labels_for(*G, o.class_index, count).to(device);
  nn::MappingNetwork::Run mapping;
  mapping.truncation_psi = o.truncation_psi;
  mapping.truncation_cutoff = o.truncation_cutoff;
  nn::SynthesisRun synthesis;
  synthesis.noise_mode = o.noise_mode;
  synthesis.fused_modconv = true;
  std::vector<at::Tensor> images;
  at::NoGradGuard no_grad;
  for (int64_t start = 0; start < count; start += o.batch) {
    const int64_t n = std::min(o.batch, count - start);
    images.push_back(data::to_uint8(G->forward(z.narrow(0, start, n), c.narrow(0, start, n), mapping, synthesis), -1, 1)
                         .cpu());
  }
  const at::Tensor all = at::cat(images);  // [count, C, H, W] uint8

  std::vector<std::string> written;
  for (int64_t i = 0; i < count; ++i) {
    const std::string path = fmt::format("{}/seed{:04d}.png", o.outdir, o.seeds[static_cast<size_t>(i)]);
    data::write_png(path, data::tile_grid(all.narrow(0, i, 1), 1, 1));
    written.push_back(path);
  }
  const auto grid_w = static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(count))));
  const int64_t grid_h = (count + grid_w - 1) / grid_w;
  at::Tensor padded = at::zeros({grid_w * grid_h, all.size(1), all.size(2), all.size(3)}, at::kByte);
  padded.narrow(0, 0, count).copy_(all);
  written.push_back(o.outdir + "/grid.png");
  data::write_png(written.back(), data::tile_grid(padded, grid_w, grid_h));
  return written;
}

}  // namespace sg2::train
