#include "sg2/train/adaptive_augment.h"

#include <ATen/ATen.h>

namespace sg2::train {

AdaptiveAugment::AdaptiveAugment(const TrainConfig& c, const at::Device& device)
    : p(at::full({}, c.augment.p, at::TensorOptions().device(device).dtype(at::kFloat))),
      real_signs(at::zeros({2}, at::TensorOptions().device(device).dtype(at::kDouble))),
      adaptive_(c.augment.mode == AugmentMode::Ada),
      target_(c.augment.target),
      interval_(c.augment.interval),
      step_(static_cast<double>(c.train.batch * c.augment.interval) / (static_cast<double>(ada_kimg(c)) * 1000)) {
  if (c.augment.mode == AugmentMode::NoAug) return;
  pipe_ = std::make_shared<AugmentPipe>(augment_pipeline(c.augment.pipe));
  pipe_->to(device);
}

at::Tensor AdaptiveAugment::operator()(const at::Tensor& images, at::Generator& rng) const {
  GeneratorDraws draws(rng);
  return (*pipe_)(images, p, draws);
}

void AdaptiveAugment::add_real_signs(const at::Tensor& signs) {
  if (!adaptive_) return;
  real_signs[0].add_(signs.detach().sum());
  real_signs[1].add_(static_cast<double>(signs.numel()));
}

bool AdaptiveAugment::adjusts_after(int64_t batch_idx) const { return adaptive_ && batch_idx % interval_ == 0; }

// As the reference: p (float32) + the step in float32, clamped at 0; no move in an interval without
// reals (sum and count 0).
void AdaptiveAugment::adjust(dist::Communicator& comm) {
  real_signs.copy_(comm.sum_over_ranks(real_signs));
  const at::Tensor mean = real_signs[0] / real_signs[1].clamp_min(1);
  const at::Tensor direction = at::where(real_signs[1] > 0, (mean - target_).sign(), at::zeros_like(mean));
  p.copy_((p + (direction * step_).to(at::kFloat)).clamp_min(0));
  real_signs.zero_();
}

}  // namespace sg2::train
