#include "sg2/core/rng.h"

#include <cmath>
#include <numeric>

namespace sg2 {

double NumpyRandomState::random_double() {
  const uint32_t a = engine_() >> 5;
  const uint32_t b = engine_() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandomState::standard_normal() {
  if (has_cached_normal_) {
    has_cached_normal_ = false;
    return cached_normal_;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * random_double() - 1.0;
    x2 = 2.0 * random_double() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  cached_normal_ = f * x1;
  has_cached_normal_ = true;
  return f * x2;
}

uint64_t NumpyRandomState::random_interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  uint64_t value = 0;
  if (max <= 0xffffffffULL) {
    while ((value = (engine_() & mask)) > max) {
    }
  } else {
    auto next64 = [&] {
      const uint64_t high = engine_();
      return (high << 32) | engine_();
    };
    while ((value = (next64() & mask)) > max) {
    }
  }
  return value;
}

void NumpyRandomState::shuffle(std::vector<int64_t>& values) {
  for (size_t i = values.size(); i-- > 1;) std::swap(values[i], values[random_interval(i)]);
}

std::vector<double> NumpyRandomState::randn(int64_t count) {
  std::vector<double> values(static_cast<size_t>(count));
  for (auto& v : values) v = standard_normal();
  return values;
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t bound) {
  if (bound <= 1) return 0;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // largest multiple of bound
  uint64_t x;
  do {
    x = next();
  } while (x >= limit);
  return x % bound;
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t mix_seed(std::initializer_list<uint64_t> keys) {
  uint64_t h = 0x243f6a8885a308d3ULL;
  for (uint64_t k : keys) {
    SplitMix64 g(h ^ (k + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
    h = g.next();
  }
  return h;
}

std::vector<int64_t> seeded_permutation(int64_t count, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 g(seed);
  for (int64_t i = count - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(g.below(static_cast<uint64_t>(i + 1)));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace sg2
