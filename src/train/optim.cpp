#include "sg2/train/optim.h"

#include "sg2/core/error.h"

#include <torch/version.h>

#include <cmath>
#include <map>

// _foreach_copy_ arrived in LibTorch 2.1; 1.13 has neither it nor _foreach_lerp.
#define SG2_TORCH_HAS_FOREACH_LERP_AND_COPY \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))

namespace sg2::train {

AdamOptions lazy_regularization(const AdamOptions& o, int64_t interval) {
  if (interval <= 0) return o;
  const double ratio = static_cast<double>(interval) / static_cast<double>(interval + 1);
  AdamOptions out = o;
  out.lr = o.lr * ratio;
  out.beta1 = std::pow(o.beta1, ratio);
  out.beta2 = std::pow(o.beta2, ratio);
  return out;
}

Adam::Adam(const nn::NamedTensors& params, const AdamOptions& options) : options_(options) {
  for (const auto& [name, param] : params) {
    Slot slot;
    slot.name = name;
    slot.param = param;
    slot.exp_avg = at::zeros_like(param, at::MemoryFormat::Preserve);
    slot.exp_avg_sq = at::zeros_like(param, at::MemoryFormat::Preserve);
    slots_.push_back(std::move(slot));
  }
}

void Adam::update_group(std::vector<Slot*>& slots, int64_t step) {
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs;
  for (Slot* s : slots) {
    params.push_back(s->param);
    grads.push_back(s->param.grad());
    exp_avgs.push_back(s->exp_avg);
    exp_avg_sqs.push_back(s->exp_avg_sq);
  }
  const double b1 = options_.beta1, b2 = options_.beta2;
  // m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
  at::_foreach_mul_(exp_avgs, b1);
  at::_foreach_add_(exp_avgs, grads, 1 - b1);
  at::_foreach_mul_(exp_avg_sqs, b2);
  at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - b2);
  // p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
  const double bias_correction1 = 1 - std::pow(b1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(b2, static_cast<double>(step));
  std::vector<at::Tensor> denominators = at::_foreach_sqrt(exp_avg_sqs);
  at::_foreach_div_(denominators, std::sqrt(bias_correction2));
  at::_foreach_add_(denominators, options_.eps);
  at::_foreach_addcdiv_(params, exp_avgs, denominators, -options_.lr / bias_correction1);
}

void Adam::step() {
  at::NoGradGuard no_grad;
  std::map<int64_t, std::vector<Slot*>> by_step;  // parameters skipped earlier have fewer steps
  for (auto& slot : slots_) {
    if (!slot.param.grad().defined()) continue;
    ++slot.step;
    by_step[slot.step].push_back(&slot);
  }
  for (auto& [step, slots] : by_step) update_group(slots, step);
}

void Adam::zero_grad() {
  for (auto& slot : slots_) slot.param.mutable_grad() = at::Tensor();
}

nn::NamedTensors Adam::state(const std::string& prefix) const {
  nn::NamedTensors out;
  for (const auto& slot : slots_) {
    out.emplace_back(prefix + slot.name + ".exp_avg", slot.exp_avg);
    out.emplace_back(prefix + slot.name + ".exp_avg_sq", slot.exp_avg_sq);
    out.emplace_back(prefix + slot.name + ".step", at::scalar_tensor(slot.step, at::kLong));
  }
  return out;
}

void Adam::load_state(const nn::TensorMap& source, const std::string& prefix, const std::string& source_name) {
  at::NoGradGuard no_grad;
  auto get = [&](const std::string& key, at::IntArrayRef shape) -> const at::Tensor& {
    auto it = source.find(key);
    SG2_CHECK(it != source.end(), "{}: optimizer state '{}' is missing", source_name, key);
    SG2_CHECK(it->second.sizes() == shape, "{}: optimizer state '{}' has shape {}, expected {}", source_name, key,
              it->second.sizes(), shape);
    return it->second;
  };
  for (auto& slot : slots_) {
    const std::string key = prefix + slot.name;
    slot.exp_avg.copy_(get(key + ".exp_avg", slot.param.sizes()));
    slot.exp_avg_sq.copy_(get(key + ".exp_avg_sq", slot.param.sizes()));
    slot.step = get(key + ".step", {}).item<int64_t>();
  }
}

void sanitize_gradients(at::Tensor& gradients) { at::nan_to_num_(gradients, 0.0, 1e5, -1e5); }

double ema_beta(int64_t batch, double ema_kimg, double ema_rampup, int64_t cur_nimg) {
  double ema_nimg = ema_kimg * 1000;
  if (ema_rampup > 0) ema_nimg = std::min(ema_nimg, static_cast<double>(cur_nimg) * ema_rampup);
  return std::pow(0.5, static_cast<double>(batch) / std::max(ema_nimg, 1e-8));
}

namespace {

std::vector<at::Tensor> tensors_of(const nn::NamedTensors& named) {
  std::vector<at::Tensor> tensors;
  for (const auto& [name, tensor] : named) tensors.push_back(tensor);
  return tensors;
}

// ema[i] = lerp(current[i], ema[i], beta), as the reference's p.lerp(p_ema, beta).
void lerp_into(const std::vector<at::Tensor>& ema, const std::vector<at::Tensor>& current, double beta) {
#if SG2_TORCH_HAS_FOREACH_LERP_AND_COPY
  at::_foreach_copy_(ema, at::_foreach_lerp(current, ema, beta));
#else
  for (size_t i = 0; i < current.size(); ++i) ema[i].copy_(current[i].lerp(ema[i], beta));
#endif
}

void copy_into(const std::vector<at::Tensor>& destinations, const std::vector<at::Tensor>& sources) {
#if SG2_TORCH_HAS_FOREACH_LERP_AND_COPY
  at::_foreach_copy_(destinations, sources);
#else
  for (size_t i = 0; i < sources.size(); ++i) destinations[i].copy_(sources[i]);
#endif
}

}  // namespace

void update_ema(torch::nn::Module& ema, const torch::nn::Module& current, double beta) {
  at::NoGradGuard no_grad;
  const auto ema_params = tensors_of(nn::named_parameters(ema));
  const auto params = tensors_of(nn::named_parameters(current));
  const auto ema_buffers = tensors_of(nn::named_buffers(ema));
  const auto buffers = tensors_of(nn::named_buffers(current));
  SG2_CHECK(ema_params.size() == params.size() && ema_buffers.size() == buffers.size(), "EMA: networks differ");
  lerp_into(ema_params, params, beta);
  copy_into(ema_buffers, buffers);
}

void set_requires_grad(torch::nn::Module& module, bool requires_grad) {
  for (auto& p : module.parameters()) p.requires_grad_(requires_grad);
}

void set_requires_grad(const nn::NamedTensors& parameters, bool requires_grad) {
  for (const auto& entry : parameters) entry.second.requires_grad_(requires_grad);
}

}  // namespace sg2::train
