#pragma once
// Adam as torch.optim.Adam (same update, same order of operations) with its state exposed for
// snapshots, the lazy-regularization correction of the reference, gradient sanitising, and the
// generator's exponential moving average.

#include "sg2/nn/state_dict.h"

#include <torch/nn/module.h>

namespace sg2::train {

// Adam's moment decays and epsilon: what a training config sets once for G's and D's optimizers.
struct AdamMoments {
  double beta1 = 0.0;
  double beta2 = 0.99;
  double eps = 1e-8;
};

struct AdamOptions : AdamMoments {
  double lr = 0.002;
};

// With regularization every `interval` minibatches the optimizer runs interval + 1 times per
// interval: lr *= r and beta **= r with r = interval / (interval + 1) keep the effective schedule.
AdamOptions lazy_regularization(const AdamOptions& options, int64_t interval);

class Adam {
 public:
  Adam(const nn::NamedTensors& params, const AdamOptions& options);

  void step();       // parameters whose gradient is undefined are skipped
  void zero_grad();  // sets gradients undefined (no memset)
  const AdamOptions& options() const { return options_; }

  // "<param>.exp_avg", "<param>.exp_avg_sq", "<param>.step" under `prefix`.
  nn::NamedTensors state(const std::string& prefix) const;
  void load_state(const nn::TensorMap& source, const std::string& prefix, const std::string& source_name);

 private:
  struct Slot {
    std::string name;
    at::Tensor param, exp_avg, exp_avg_sq;
    int64_t step = 0;
  };
  void update_group(std::vector<Slot*>& slots, int64_t step);

  std::vector<Slot> slots_;
  AdamOptions options_;
};

// Replaces NaN by 0 and +-inf by +-1e5 in place: the reference's treatment of every gradient after
// the allreduce, here of a whole reducer bucket at once (as stylegan3 treats its flat gradient).
void sanitize_gradients(at::Tensor& gradients);

// beta = 0.5 ** (batch / ema_nimg), ema_nimg = ema_kimg * 1000, limited to cur_nimg * rampup.
double ema_beta(int64_t batch, double ema_kimg, double ema_rampup, int64_t cur_nimg);

// ema = lerp(current, ema, beta) for parameters; buffers are copied. With LibTorch 2.x one
// multi-tensor launch per list on CUDA (the same lerp per element as at::lerp), per tensor on 1.13.
void update_ema(torch::nn::Module& ema, const torch::nn::Module& current, double beta);

void set_requires_grad(torch::nn::Module& module, bool requires_grad);
void set_requires_grad(const nn::NamedTensors& parameters, bool requires_grad);

}  // namespace sg2::train
