#include "sg2/train/sample_grid.h"

#include "sg2/core/rng.h"
#include "sg2/data/image_io.h"
#include "sg2/data/loader.h"

#include <map>

namespace sg2::train {

namespace {

std::vector<int64_t> grid_indices(const data::Dataset& dataset, int64_t grid_w, int64_t grid_h, uint64_t seed) {
  const int64_t count = grid_w * grid_h;
  std::vector<int64_t> order = seeded_permutation(dataset.size(), mix_seed({seed, 0x47524944ULL}));  // "GRID"
  std::vector<int64_t> indices;
  if (dataset.label_dim() == 0) {
    for (int64_t i = 0; i < count; ++i) indices.push_back(order[static_cast<size_t>(i % dataset.size())]);
    return indices;
  }
  // Group the (shuffled) records by label; row y shows label y mod #labels.
  std::map<std::vector<float>, std::vector<int64_t>> groups;
  std::vector<float> label(static_cast<size_t>(dataset.label_dim()));
  for (int64_t record : order) {
    dataset.read_label(record, label.data());
    groups[label].push_back(record);
  }
  std::vector<std::vector<int64_t>*> rows;
  for (auto& [key, records] : groups) rows.push_back(&records);
  for (int64_t y = 0; y < grid_h; ++y) {
    const auto& records = *rows[static_cast<size_t>(y) % rows.size()];
    const int64_t offset = (y / static_cast<int64_t>(rows.size())) * grid_w;
    for (int64_t x = 0; x < grid_w; ++x) {
      indices.push_back(records[static_cast<size_t>((offset + x) % static_cast<int64_t>(records.size()))]);
    }
  }
  return indices;
}

}  // namespace

SampleGrid setup_sample_grid(const data::Dataset& dataset, int64_t grid_w, int64_t grid_h, int64_t z_dim,
                             uint64_t seed, const at::Device& device) {
  SampleGrid grid;
  const auto [default_w, default_h] = data::default_grid_size(dataset.shape().height, dataset.shape().width);
  grid.width = grid_w > 0 ? grid_w : default_w;
  grid.height = grid_h > 0 ? grid_h : default_h;
  std::vector<data::ShardedSampler::Item> items;
  for (int64_t index : grid_indices(dataset, grid.width, grid.height, seed)) items.push_back({index, false});
  std::shared_ptr<const data::Dataset> borrowed(&dataset, [](const data::Dataset*) {});
  data::Batch batch = data::BatchLoader(borrowed, data::LoaderOptions{}).load_items(items);
  grid.reals = batch.images;
  grid.c = batch.labels.to(device);
  at::Generator cpu = at::globalContext().defaultGenerator(at::kCPU).clone();
  {
    std::lock_guard<std::mutex> lock(cpu.mutex());
    cpu.set_current_seed(mix_seed({seed, 0x5a475249ULL}));  // "ZGRI"
  }
  grid.z = at::randn({grid.width * grid.height, z_dim}, cpu, at::kFloat).to(device);
  return grid;
}

at::Tensor render_grid(nn::Generator& G, const SampleGrid& grid, int64_t batch, bool fused_modconv) {
  at::NoGradGuard no_grad;
  nn::SynthesisRun run;
  run.noise_mode = nn::NoiseMode::Const;
  run.fused_modconv = fused_modconv;
  std::vector<at::Tensor> images;
  const auto z_chunks = grid.z.split(batch);
  const auto c_chunks = grid.c.split(batch);
  for (size_t i = 0; i < z_chunks.size(); ++i) {
    images.push_back(data::to_uint8(G.forward(z_chunks[i], c_chunks[i], {}, run), -1.0, 1.0).cpu());
  }
  return at::cat(images);
}

data::Image save_grid_png(const at::Tensor& images_uint8, const SampleGrid& grid, const std::string& path) {
  data::Image image = data::tile_grid(images_uint8, grid.width, grid.height);
  data::write_png(path, image);
  return image;
}

}  // namespace sg2::train
