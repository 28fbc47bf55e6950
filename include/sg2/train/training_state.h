#pragma once
// Everything a run continues exactly from, each piece named once: the networks (G, D, G_ema), the
// optimizer states, loose tensors (loss.pl_mean) and counters (progress.*). Broadcast from rank 0,
// the replica check, snapshot save and restore, and stylegan2_import all go through one
// TrainingState, so a piece registered here is carried by every one of them. The per-rank step
// generators are not in it: they differ by rank by design (snapshot.h stores them).

#include "sg2/nn/networks.h"
#include "sg2/nn/state_dict.h"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sg2::train {

class Adam;

struct Progress {
  int64_t cur_nimg = 0;   // real images shown so far (all processes)
  int64_t batch_idx = 0;  // steps taken
  int64_t cur_tick = 0;   // index of the next tick to end
  int64_t tick_start_nimg = 0;
};

class TrainingState {
 public:
  // Registered pieces are referred to, not copied: the state always reads their current values.
  void add_networks(nn::Generator& G, nn::Discriminator& D, nn::Generator& G_ema);  // "G", "D", "G_ema"
  void add_optimizer(const std::string& name, Adam& optimizer);
  // optional: a snapshot without it (written before it existed) leaves its value as it is.
  void add_tensor(const std::string& name, at::Tensor& tensor, bool optional = false);
  // A tensor each rank adds to on its own (ADA's sums of signs): not replicated; a snapshot holds
  // its sum over the ranks (sum_rank_sums_on_rank0 first), which resumes on rank 0, 0 elsewhere.
  void add_rank_sum(const std::string& name, at::Tensor& tensor);
  const std::vector<std::pair<std::string, at::Tensor*>>& rank_sums() const { return rank_sums_; }
  void clear_rank_sums() const;
  void add_counter(const std::string& name, int64_t& counter);
  void add_progress(Progress& progress);  // progress.cur_nimg, .batch_idx, .cur_tick, .tick_start_nimg

  // Every module's state dict ("G.mapping.fc0.weight", ...), then the loose tensors: what every
  // replica holds identical.
  NamedTensors replicated_tensors() const;
  // What a snapshot stores: the replicated tensors, the rank sums and the optimizer states
  // ("G_opt.<param>.exp_avg", ...).
  NamedTensors saved_tensors() const;
  std::vector<std::pair<std::string, int64_t>> counters() const;
  // {"G": {...}, "D": {...}}: the networks' options in the fixture JSON form.
  nlohmann::json network_options() const;

  // The modules' weights from `tensors`; `source` names the file in errors.
  void load_modules(const nn::TensorMap& tensors, const std::string& source) const;
  // The optimizer states, loose tensors and counters (a full snapshot, not an import).
  void load_training_progress(const nn::TensorMap& tensors, const std::map<std::string, int64_t>& integers,
                              const std::string& source) const;

 private:
  const nn::Generator* G_ = nullptr;
  const nn::Discriminator* D_ = nullptr;
  std::vector<std::pair<std::string, torch::nn::Module*>> modules_;
  std::vector<std::pair<std::string, Adam*>> optimizers_;
  std::vector<std::pair<std::string, at::Tensor*>> tensors_;
  std::vector<std::string> optional_;
  std::vector<std::pair<std::string, at::Tensor*>> rank_sums_;
  std::vector<std::pair<std::string, int64_t*>> counters_;
};

}  // namespace sg2::train
