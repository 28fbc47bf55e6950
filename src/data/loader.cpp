#include "sg2/data/loader.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"

#include <algorithm>
#include <numeric>

namespace sg2::data {

namespace {
constexpr uint64_t kShuffleKey = 0x5348554646ULL;  // "SHUFF"
constexpr uint64_t kFlipKey = 0x464c4950ULL;       // "FLIP"
constexpr size_t kCachedEpochs = 3;
}  // namespace

ShardedSampler::ShardedSampler(int64_t dataset_size, int64_t global_batch, int rank, int world_size, uint64_t seed)
    : dataset_size_(dataset_size), global_batch_(global_batch), rank_(rank), world_size_(world_size), seed_(seed) {
  SG2_CHECK(dataset_size > 0, "cannot sample from an empty dataset");
  SG2_CHECK(world_size >= 1 && rank >= 0 && rank < world_size, "rank {} outside world of size {}", rank, world_size);
  SG2_CHECK(global_batch % world_size == 0, "global batch {} is not divisible by the world size {}", global_batch,
            world_size);
}

const std::vector<int64_t>& ShardedSampler::permutation(int64_t epoch) const {
  auto it = permutations_.find(epoch);
  if (it != permutations_.end()) return it->second;
  if (permutations_.size() >= kCachedEpochs) permutations_.erase(permutations_.begin());
  return permutations_[epoch] = seeded_permutation(dataset_size_, mix_seed({seed_, kShuffleKey, uint64_t(epoch)}));
}

ShardedSampler::Item ShardedSampler::item_at(int64_t position) const {
  const int64_t epoch = position / dataset_size_;
  const int64_t offset = position % dataset_size_;
  Item item;
  item.record = permutation(epoch)[static_cast<size_t>(offset)];
  item.flip = (mix_seed({seed_, kFlipKey, uint64_t(position)}) & 1) != 0;
  return item;
}

std::vector<ShardedSampler::Item> ShardedSampler::rank_items(int64_t batch_index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t local = local_batch();
  const int64_t first = batch_index * global_batch_ + rank_ * local;
  std::vector<Item> items;
  items.reserve(static_cast<size_t>(local));
  for (int64_t i = 0; i < local; ++i) items.push_back(item_at(first + i));
  return items;
}

std::vector<ShardedSampler::Item> ShardedSampler::global_items(int64_t batch_index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Item> items;
  for (int64_t i = 0; i < global_batch_; ++i) items.push_back(item_at(batch_index * global_batch_ + i));
  return items;
}

BatchLoader::BatchLoader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options)
    : dataset_(std::move(dataset)),
      options_(options),
      sampler_(dataset_->size(), options.global_batch, options.rank, options.world_size, options.seed) {}

Batch BatchLoader::load(int64_t batch_index) const { return load_items(sampler_.rank_items(batch_index)); }

Batch BatchLoader::load_items(const std::vector<ShardedSampler::Item>& items) const {
  const ImageShape s = dataset_->shape();
  const auto count = static_cast<int64_t>(items.size());
  Batch batch;
  const auto pinned = at::TensorOptions().pinned_memory(options_.pin_memory);
  batch.images = at::empty({count, s.channels, s.height, s.width}, pinned.dtype(at::kByte));
  batch.labels = at::zeros({count, dataset_->label_dim()}, pinned.dtype(at::kFloat));
  uint8_t* pixels = batch.images.data_ptr<uint8_t>();
  float* labels = batch.labels.data_ptr<float>();
  for (int64_t i = 0; i < count; ++i) {
    uint8_t* image = pixels + i * s.bytes();
    dataset_->read_image(items[i].record, image);
    dataset_->read_label(items[i].record, labels + i * dataset_->label_dim());
    if (options_.mirror && items[i].flip) {
      for (int64_t row = 0; row < s.channels * s.height; ++row) std::reverse(image + row * s.width, image + (row + 1) * s.width);
    }
  }
  return batch;
}

at::Tensor all_labels(const Dataset& dataset) {
  at::Tensor labels = at::zeros({dataset.size(), dataset.label_dim()}, at::kFloat);
  if (dataset.label_dim() == 0) return labels;
  float* out = labels.data_ptr<float>();
  for (int64_t i = 0; i < dataset.size(); ++i) dataset.read_label(i, out + i * dataset.label_dim());
  return labels;
}

at::Tensor read_images(const Dataset& dataset, const std::vector<int64_t>& indices) {
  const ImageShape s = dataset.shape();
  at::Tensor images = at::empty({static_cast<int64_t>(indices.size()), s.channels, s.height, s.width}, at::kByte);
  uint8_t* out = images.data_ptr<uint8_t>();
  for (size_t i = 0; i < indices.size(); ++i) dataset.read_image(indices[i], out + static_cast<int64_t>(i) * s.bytes());
  return images;
}

std::vector<int64_t> index_range(int64_t start, int64_t count) {
  std::vector<int64_t> indices(static_cast<size_t>(count));
  std::iota(indices.begin(), indices.end(), start);
  return indices;
}

}  // namespace sg2::data
