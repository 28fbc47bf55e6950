#pragma once
// Snapshots: one versioned file holding everything a run needs to continue exactly - G, D, G_ema,
// both Adam states, pl_mean, ADA's state, the step generator's state, the progress counters, the network
// options and the resolved config. The file is a torch.save-compatible dict (Python can
// torch.load it); keys:
//
//   format = "stylegan2-cpp-snapshot", version = 2, config (YAML), networks (JSON {"G", "D"}),
//   progress.cur_nimg / batch_idx / cur_tick / tick_start_nimg, world_size,
//   G.<name>, D.<name>, G_ema.<name>, G_opt.<param>.{exp_avg,exp_avg_sq,step}, D_opt...,
//   loss.pl_mean, augment.p (the augmentation probability), augment.real_signs (ADA's sums of the
//   signs of D's real logits since its last adjustment, over every rank),
//   rng.step (rank 0's step generator), rng.step.rank<r> (rank r > 0's, dist.rng = rank),
//   imported = 1 in snapshots stylegan2_import wrote (networks only: no optimizer state, progress 0),
//   checksum = CRC-32C of every other entry (version 2 on; verified by every load)
//
// Writes go to a temporary name and are renamed, so a crash never leaves a partial snapshot.

#include "sg2/data/dataset.h"
#include "sg2/nn/networks.h"
#include "sg2/nn/state_dict.h"

#include <ATen/core/Dict.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace sg2::train {

class Trainer;
class TrainingState;

constexpr const char* kSnapshotFormat = "stylegan2-cpp-snapshot";
constexpr int64_t kSnapshotVersion = 2;  // 2: with a checksum

struct Snapshot {
  std::string path;
  int64_t version = 0;
  std::string config_yaml;
  nlohmann::json networks;            // {"G": {...}, "D": {...}} in the fixture JSON form
  std::map<std::string, int64_t> integers;
  nn::TensorMap tensors;
  int64_t integer(const std::string& key) const;
  bool imported() const { return integers.count("imported") > 0 && integers.at("imported") != 0; }
};

// rank_states: every rank's step generator state (Trainer::gather_step_rng_states); empty: this
// process's only. Rank 0 calls it; the file is written atomically.
void save_snapshot(const std::string& path, Trainer& trainer, const std::vector<at::Tensor>& rank_states = {});
Snapshot load_snapshot(const std::string& path);

// A snapshot's dict: format, version, config, the networks' options, and CPU copies of the state's
// tensors and counters. Writing one adds its checksum and is atomic.
c10::Dict<c10::IValue, c10::IValue> snapshot_dict(const std::string& config_yaml, const TrainingState& state);
void write_snapshot_dict(const std::string& path, c10::Dict<c10::IValue, c10::IValue> dict);

// CRC-32C of every entry but "checksum", in key order: tensors by dtype, shape and bytes.
uint32_t snapshot_checksum(const c10::Dict<c10::IValue, c10::IValue>& dict);
// The dict a torch.save-compatible file holds; a clear error for anything else.
c10::Dict<c10::IValue, c10::IValue> read_pickled_dict(const std::string& path);
bool is_snapshot_dict(const c10::Dict<c10::IValue, c10::IValue>& dict);
// Fails, naming `path`, when the dict's checksum is missing or differs (version-1 snapshots, which
// predate checksums, pass with a warning).
void verify_snapshot_checksum(const c10::Dict<c10::IValue, c10::IValue>& dict, const std::string& path);

// Continues `trainer` from `snapshot` (same architecture; any world size). An imported snapshot
// gives the network weights only: the optimizers start fresh and the progress at 0.
void restore_trainer(Trainer& trainer, const Snapshot& snapshot);

// A generator from a snapshot, for inference in `precision` (float32 by default): which = "G_ema"
// (default) or "G".
std::shared_ptr<nn::Generator> load_generator(const Snapshot& snapshot, const nn::MixedPrecision& precision = {},
                                              const std::string& which = "G_ema");
// The precision the snapshot's run trained G with, for inference on `device` (inference_precision
// of its config), so that metrics of a snapshot equal those measured in training; float32 where the
// snapshot has no readable run config (imported networks).
nn::MixedPrecision snapshot_precision(const Snapshot& snapshot, const at::Device& device);

// Fails, saying both shapes, unless the generator `g` of `network` makes the images of `dataset`
// (resolution, channels, and its labels where g is conditional). data_path: the dataset as given.
void check_network_fits_dataset(const nn::GeneratorOptions& g, const std::string& network,
                                const data::Dataset& dataset, const std::string& data_path);

}  // namespace sg2::train
