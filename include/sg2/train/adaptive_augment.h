#pragma once
// Adaptive discriminator augmentation in training (reference: training_loop.py's ADA heuristic):
// the pipeline (augment.h) between every image and D, and the probability p it applies with. With
// augment.mode ada, p follows the sign of D's real logits: every augment.interval steps the mean
// sign since the last adjustment, over every rank, is compared with augment.target, and p moves by
// batch * interval / (augment.kimg * 1000) towards more augmentation when D is overconfident on the
// reals, towards less otherwise, and never below 0. p and the signs stay on the device (no host
// sync); the step counts are global, so p does not depend on the world size.

#include "sg2/distributed/communicator.h"
#include "sg2/train/augment.h"
#include "sg2/train/config.h"

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <memory>

namespace sg2::train {

class AdaptiveAugment {
 public:
  AdaptiveAugment(const TrainConfig& config, const at::Device& device);

  // Whether images go through the pipeline (augment.mode ada or fixed).
  bool enabled() const { return pipe_ != nullptr; }
  // images [N, C, H, W] float32 -> augmented with probability p, the draws from `rng`.
  at::Tensor operator()(const at::Tensor& images, at::Generator& rng) const;

  // ada: adds the signs of D's real logits ([N, 1], as reported in Loss/signs/real) to the interval's
  // sums. No host sync.
  void add_real_signs(const at::Tensor& signs);
  // ada: whether step `batch_idx` (counted after it ran) ends an interval.
  bool adjusts_after(int64_t batch_idx) const;
  // ada: sums the interval's signs over the ranks, moves p and starts the next interval. Collective.
  void adjust(dist::Communicator& comm);

  at::Tensor p;          // [] float32 on the device, as the reference's buffer
  at::Tensor real_signs;  // [2] float64: the sum of this rank's signs since the last adjustment, their count

 private:
  std::shared_ptr<AugmentPipe> pipe_;
  bool adaptive_ = false;
  double target_ = 0.6;
  int64_t interval_ = 4;
  double step_ = 0;  // batch * interval / (kimg * 1000)
};

}  // namespace sg2::train
