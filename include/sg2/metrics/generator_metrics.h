#pragma once
// The metrics of a generator alone (reference: metrics/inception_score.py, perceptual_path_length.py).
//
// Inception Score: exp(E_x KL(p(y|x) || p(y))) over each of `num_splits` consecutive splits of the
// fakes' class probabilities (the Inception called with no output bias), as the mean and the
// population standard deviation over the splits.
//
// Perceptual path length: for each sample, latents z0, z1 ~ N(0, I), a class drawn from the
// dataset's labels, and t ~ U(0, 1) ("full") or t = 0 ("end"); the interpolation at t and t + eps
// (slerp in Z, lerp in W after the mapping), both rendered with the same noise (fresh per pair of
// samples, as the reference's batches of 2), in float32; center-cropped (the reference's ppl_*:
// rows 3/8-7/8, columns 2/8-6/8; ppl2_* not), box-downsampled by img_resolution / 256 where that
// exceeds 1, scaled to [0, 255]; distance = |lpips(t) - lpips(t + eps)|^2 / eps^2. The PPL is the
// mean of the distances between their 1st percentile (numpy's 'lower') and 99th ('higher').

#include "sg2/metrics/detector.h"
#include "sg2/nn/networks.h"

#include <ATen/ATen.h>

#include <memory>
#include <utility>

namespace sg2::metrics {

// probabilities: [N, K] -> {mean, std} of the splits' scores (float64).
std::pair<double, double> inception_score(const at::Tensor& probabilities, int64_t num_splits);

// Spherical interpolation of batches of vectors: a, b [N, D], t [N, 1] -> [N, D] unit vectors.
at::Tensor slerp(const at::Tensor& a, const at::Tensor& b, const at::Tensor& t);

// distances: [N] -> their mean between the 1st and 99th percentiles.
double path_length_mean(const at::Tensor& distances);

struct PathLengthOptions {
  bool w_space = true;       // interpolate in W (lerp) or Z (slerp)
  bool full = false;         // t ~ U(0, 1) ("full") or t = 0 ("end")
  bool crop = true;          // the reference's ppl_* center crop (ppl2_*: none)
  double epsilon = 1e-4;
};

// The distances of samples [start, start + count), from random streams keyed by (seed, the sample
// block, the pair of samples): the same numbers whichever rank computes them.
class PathLengthSampler {
 public:
  // G: copied (its noise buffers are redrawn per pair of samples); label_table: [L, c_dim] of the
  // dataset, for conditional networks.
  PathLengthSampler(const nn::Generator& G, FeatureDetector& lpips, PathLengthOptions options, uint64_t seed,
                    at::Tensor label_table);
  // -> [count, 1] float32 on G's device. block: which random streams to use (the evaluator's block).
  at::Tensor distances(int64_t start, int64_t count, uint64_t block);
  // The distances of given samples: z0, z1 [n, z_dim], t [n], c [n, c_dim]; the first is sample
  // `first_sample` (its pair's noise) -> [n, 1].
  at::Tensor distances_of(const at::Tensor& z0, const at::Tensor& z1, const at::Tensor& t, const at::Tensor& c,
                          int64_t first_sample);

 private:
  at::Tensor images_of_pair(const at::Tensor& ws, uint64_t pair);  // [2n, num_ws, w_dim] -> [2n, 3, H, W]

  std::shared_ptr<nn::Generator> G_;
  FeatureDetector& lpips_;
  PathLengthOptions options_;
  uint64_t seed_;
  at::Tensor label_table_;
  at::Device device_;
};

}  // namespace sg2::metrics
