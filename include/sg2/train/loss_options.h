#pragma once
// The loss's hyper-parameters (train/config.h's loss.*), as the reference's StyleGAN2Loss arguments.

#include <cstdint>

namespace sg2::train {

struct LossOptions {
  double r1_gamma = 10.0;
  double pl_weight = 2.0;
  double pl_decay = 0.01;
  int64_t pl_batch_shrink = 2;
  double style_mixing_prob = 0.9;
};

}  // namespace sg2::train
