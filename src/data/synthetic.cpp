#include "sg2/data/synthetic.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"

#include <algorithm>
#include <cmath>

namespace sg2::data {

SyntheticDataset::SyntheticDataset(int64_t size, int64_t resolution, int64_t channels, int64_t label_dim)
    : size_(size), resolution_(resolution), channels_(channels), label_dim_(label_dim) {
  SG2_CHECK(size > 0 && resolution >= 4 && channels >= 1, "synthetic data needs size, resolution and channels > 0");
}

void SyntheticDataset::read_image(int64_t index, uint8_t* out) const {
  // A few random plane waves per channel: smooth, varied, deterministic in the index.
  SplitMix64 random(mix_seed({0x53594e54ULL, static_cast<uint64_t>(index)}));  // "SYNT"
  const double r = static_cast<double>(resolution_);
  for (int64_t c = 0; c < channels_; ++c) {
    double fx[3], fy[3], phase[3];
    for (int k = 0; k < 3; ++k) {
      fx[k] = (random.uniform() - 0.5) * 12.0 / r;
      fy[k] = (random.uniform() - 0.5) * 12.0 / r;
      phase[k] = random.uniform() * 6.283185307179586;
    }
    for (int64_t y = 0; y < resolution_; ++y) {
      for (int64_t x = 0; x < resolution_; ++x) {
        double v = 0;
        for (int k = 0; k < 3; ++k) v += std::sin(fx[k] * x * 6.283185307179586 + fy[k] * y * 6.283185307179586 + phase[k]);
        out[(c * resolution_ + y) * resolution_ + x] = static_cast<uint8_t>(std::clamp(127.5 + 42.0 * v, 0.0, 255.0));
      }
    }
  }
}

void SyntheticDataset::read_label(int64_t index, float* out) const {
  if (label_dim_ == 0) return;
  std::fill(out, out + label_dim_, 0.0f);
  out[index % label_dim_] = 1.0f;
}

}  // namespace sg2::data
