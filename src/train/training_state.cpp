#include "sg2/train/training_state.h"

#include "sg2/core/error.h"
#include "sg2/train/optim.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/nn/module.h>

#include <algorithm>

namespace sg2::train {

void TrainingState::add_networks(nn::Generator& G, nn::Discriminator& D, nn::Generator& G_ema) {
  G_ = &G;
  D_ = &D;
  modules_ = {{"G", &G}, {"D", &D}, {"G_ema", &G_ema}};
}

nlohmann::json TrainingState::network_options() const {
  SG2_CHECK(G_ != nullptr && D_ != nullptr, "the training state has no networks");
  return {{"G", nn::to_json(G_->options)}, {"D", nn::to_json(D_->options)}};
}

void TrainingState::add_optimizer(const std::string& name, Adam& optimizer) {
  optimizers_.emplace_back(name, &optimizer);
}

void TrainingState::add_tensor(const std::string& name, at::Tensor& tensor, bool optional) {
  tensors_.emplace_back(name, &tensor);
  if (optional) optional_.push_back(name);
}

void TrainingState::add_rank_sum(const std::string& name, at::Tensor& tensor) {
  rank_sums_.emplace_back(name, &tensor);
  optional_.push_back(name);
}

void TrainingState::clear_rank_sums() const {
  for (const auto& entry : rank_sums_) entry.second->zero_();
}

void TrainingState::add_counter(const std::string& name, int64_t& counter) { counters_.emplace_back(name, &counter); }

void TrainingState::add_progress(Progress& progress) {
  add_counter("progress.cur_nimg", progress.cur_nimg);
  add_counter("progress.batch_idx", progress.batch_idx);
  add_counter("progress.cur_tick", progress.cur_tick);
  add_counter("progress.tick_start_nimg", progress.tick_start_nimg);
}

NamedTensors TrainingState::replicated_tensors() const {
  NamedTensors all;
  for (const auto& [name, module] : modules_) {
    NamedTensors state = nn::state_dict(*module, name + ".");
    all.insert(all.end(), state.begin(), state.end());
  }
  for (const auto& [name, tensor] : tensors_) all.emplace_back(name, *tensor);
  return all;
}

NamedTensors TrainingState::saved_tensors() const {
  NamedTensors all = replicated_tensors();
  for (const auto& [name, tensor] : rank_sums_) all.emplace_back(name, *tensor);
  for (const auto& [name, optimizer] : optimizers_) {
    NamedTensors state = optimizer->state(name + ".");
    all.insert(all.end(), state.begin(), state.end());
  }
  return all;
}

std::vector<std::pair<std::string, int64_t>> TrainingState::counters() const {
  std::vector<std::pair<std::string, int64_t>> values;
  for (const auto& [name, counter] : counters_) values.emplace_back(name, *counter);
  return values;
}

void TrainingState::load_modules(const nn::TensorMap& tensors, const std::string& source) const {
  for (const auto& [name, module] : modules_) nn::load_state_dict(*module, tensors, name + ".", source);
}

void TrainingState::load_training_progress(const nn::TensorMap& tensors, const std::map<std::string, int64_t>& integers,
                                           const std::string& source) const {
  for (const auto& [name, optimizer] : optimizers_) optimizer->load_state(tensors, name + ".", source);
  std::vector<std::pair<std::string, at::Tensor*>> loose = tensors_;
  loose.insert(loose.end(), rank_sums_.begin(), rank_sums_.end());
  for (const auto& [name, tensor] : loose) {
    auto it = tensors.find(name);
    const bool optional = std::find(optional_.begin(), optional_.end(), name) != optional_.end();
    if (it == tensors.end() && optional) {
      spdlog::info("{}: no {} (a snapshot from before it was saved): it starts from the config", source, name);
      continue;
    }
    SG2_CHECK(it != tensors.end(), "{}: snapshot has no {}", source, name);
    SG2_CHECK(it->second.sizes() == tensor->sizes(), "{}: {} has shape [{}], the run's has [{}]", source, name,
              fmt::join(it->second.sizes(), ", "), fmt::join(tensor->sizes(), ", "));
    at::NoGradGuard no_grad;
    tensor->copy_(it->second);
  }
  for (const auto& [name, counter] : counters_) {
    auto it = integers.find(name);
    SG2_CHECK(it != integers.end(), "{}: snapshot has no '{}'", source, name);
    *counter = it->second;
  }
}

}  // namespace sg2::train
