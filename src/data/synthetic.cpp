#include "sg2/data/synthetic.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sg2::data {

SyntheticDataset::SyntheticDataset(int64_t size, int64_t resolution, int64_t channels, int64_t label_dim)
    : size_(size), resolution_(resolution), channels_(channels), label_dim_(label_dim) {
  SG2_CHECK(size > 0 && resolution >= 4 && channels >= 1, "synthetic data needs size, resolution and channels > 0");
}

namespace {

constexpr int kWaves = 3;  // plane waves per channel
constexpr double kTwoPi = 6.283185307179586;

// sin and cos of frequency * 2 pi * i + phase for i in [0, n): one axis of one wave.
struct AxisTable {
  std::vector<double> sin, cos;
  AxisTable(int64_t n, double frequency, double phase) : sin(static_cast<size_t>(n)), cos(static_cast<size_t>(n)) {
    for (int64_t i = 0; i < n; ++i) {
      const double angle = frequency * static_cast<double>(i) * kTwoPi + phase;
      sin[static_cast<size_t>(i)] = std::sin(angle);
      cos[static_cast<size_t>(i)] = std::cos(angle);
    }
  }
};

}  // namespace

// A few random plane waves per channel: smooth, varied, deterministic in the index. Each wave
// sin(a x + b y + p) = sin(a x) cos(b y + p) + cos(a x) sin(b y + p) comes from a table per axis, so
// a pixel costs multiplies, not sines: the GPU benches take 256x256 RGB images faster than a few
// loader threads could take three sines per value.
void SyntheticDataset::read_image(int64_t index, uint8_t* out) const {
  SplitMix64 random(mix_seed({0x53594e54ULL, static_cast<uint64_t>(index)}));  // "SYNT"
  const double r = static_cast<double>(resolution_);
  for (int64_t c = 0; c < channels_; ++c) {
    std::vector<AxisTable> along_x, along_y;
    for (int k = 0; k < kWaves; ++k) {
      const double fx = (random.uniform() - 0.5) * 12.0 / r;
      const double fy = (random.uniform() - 0.5) * 12.0 / r;
      along_x.emplace_back(resolution_, fx, 0.0);
      along_y.emplace_back(resolution_, fy, random.uniform() * kTwoPi);
    }
    for (int64_t y = 0; y < resolution_; ++y) {
      uint8_t* row = out + (c * resolution_ + y) * resolution_;
      for (int64_t x = 0; x < resolution_; ++x) {
        double v = 0;
        for (int k = 0; k < kWaves; ++k) {
          const auto i = static_cast<size_t>(x), j = static_cast<size_t>(y);
          v += along_x[k].sin[i] * along_y[k].cos[j] + along_x[k].cos[i] * along_y[k].sin[j];
        }
        row[x] = static_cast<uint8_t>(std::clamp(127.5 + 42.0 * v, 0.0, 255.0));
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
