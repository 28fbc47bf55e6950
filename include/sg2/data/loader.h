#pragma once
// Sharded, seeded batches (docs/architecture.md, "Data sharding"): every epoch has a seeded permutation of all
// record indices; global batch k takes the next B positions of the endless sequence of epochs, and
// rank r reads only its contiguous slice. Mirror flips are keyed by (seed, position), so the data a
// run sees is the same for every world size and after a resume.

#include "sg2/data/dataset.h"

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace sg2::data {

struct Batch {
  at::Tensor images;  // [b, C, H, W] uint8
  at::Tensor labels;  // [b, label_dim] float32
};

class ShardedSampler {
 public:
  ShardedSampler(int64_t dataset_size, int64_t global_batch, int rank, int world_size, uint64_t seed);

  struct Item {
    int64_t record;  // index into the dataset
    bool flip;       // mirror horizontally (when enabled)
  };
  std::vector<Item> rank_items(int64_t batch_index) const;    // this rank's slice of global batch k
  std::vector<Item> global_items(int64_t batch_index) const;  // all of global batch k

  int64_t local_batch() const { return global_batch_ / world_size_; }

 private:
  Item item_at(int64_t position) const;
  const std::vector<int64_t>& permutation(int64_t epoch) const;

  int64_t dataset_size_, global_batch_;
  int rank_, world_size_;
  uint64_t seed_;
  mutable std::mutex mutex_;
  mutable std::map<int64_t, std::vector<int64_t>> permutations_;  // a few recent epochs
};

struct LoaderOptions {
  int64_t global_batch = 32;
  int rank = 0;
  int world_size = 1;
  uint64_t seed = 0;
  bool mirror = false;
  bool pin_memory = false;  // batches in page-locked memory, for asynchronous copies to a GPU
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const Dataset> dataset, const LoaderOptions& options);
  Batch load(int64_t batch_index) const;  // this rank's slice of global batch k
  Batch load_items(const std::vector<ShardedSampler::Item>& items) const;
  const Dataset& dataset() const { return *dataset_; }
  const ShardedSampler& sampler() const { return sampler_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  ShardedSampler sampler_;
};

// All labels of a dataset as one tensor [N, label_dim] (for drawing generator labels).
at::Tensor all_labels(const Dataset& dataset);

// The images at `indices`, uint8 [n, C, H, W] (metrics and the detector read them without the loader).
at::Tensor read_images(const Dataset& dataset, const std::vector<int64_t>& indices);
// Indices [start, start + count).
std::vector<int64_t> index_range(int64_t start, int64_t count);

}  // namespace sg2::data
