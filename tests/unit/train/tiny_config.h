#pragma once
// A small but complete training configuration on real Fashion-MNIST data, fast enough for unit tests.

#include "sg2/data/fashion_mnist.h"
#include "sg2/train/config.h"

namespace sg2::test {

inline train::TrainConfig tiny_config() {
  train::TrainConfig c;
  c.run.preset = "tiny";
  c.run.threads = 2;
  c.run.grid_w = 4;
  c.run.grid_h = 2;
  c.data.path = data::kFashionMnistDir;
  c.data.max_images = 512;
  c.data.mirror = true;
  c.G.z_dim = c.G.w_dim = 32;
  c.G.mapping_layers = 2;
  c.G.channel_base = 256;
  c.G.channel_max = 32;
  c.D.channel_base = 256;
  c.D.channel_max = 32;
  c.D.mbstd_group_size = 4;
  c.train.batch = 8;
  c.train.seed = 3;
  c.train.ema_kimg = 0.1;
  c.train.ema_rampup = 0.05;
  c.optim.G_reg_interval = 2;  // both regularizers within a few steps
  c.optim.D_reg_interval = 3;
  return c;
}

}  // namespace sg2::test
