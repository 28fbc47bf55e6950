#pragma once
// Host-side random numbers that must be reproducible across platforms and runs.
//
// NumpyRandomState reproduces numpy.random.RandomState(seed).randn(...) bit for bit (MT19937 with
// numpy's legacy polar Box-Muller), so `--seeds 0-63` gives the same latents as NVIDIA's
// generate.py. mix_seed and SplitMix64 derive independent streams from (seed, epoch, step, ...)
// keys, so shuffles and flips do not depend on the world size or on earlier draws.

#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

namespace sg2 {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed) : engine_(seed) {}
  double random_double();             // genrand_res53: uniform in [0, 1) with 53 random bits
  double standard_normal();           // legacy_gauss
  std::vector<double> randn(int64_t count);
  uint64_t random_interval(uint64_t max);  // uniform in [0, max] by masked rejection, as numpy draws it
  void shuffle(std::vector<int64_t>& values);  // RandomState.shuffle of a 1-D array

 private:
  std::mt19937 engine_;               // the same MT19937 and seeding as numpy's legacy RandomState
  bool has_cached_normal_ = false;
  double cached_normal_ = 0.0;
};

// SplitMix64: a small, fast generator with a fixed, portable output sequence.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  uint64_t below(uint64_t bound);     // uniform in [0, bound), unbiased (rejection)
  double uniform();                   // uniform in [0, 1) with 53 random bits

 private:
  uint64_t state_;
};

// Hashes a list of integers into one 64-bit seed (order-sensitive).
uint64_t mix_seed(std::initializer_list<uint64_t> keys);

// Fisher-Yates permutation of [0, count) from a seed; identical on every platform.
std::vector<int64_t> seeded_permutation(int64_t count, uint64_t seed);

}  // namespace sg2
