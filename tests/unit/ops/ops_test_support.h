#pragma once
// Helpers shared by the nn unit tests.

#include "sg2/core/cpu_level.h"
#include "sg2/ops/kernels.h"
#include "sg2/ops/ops.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <algorithm>
#include <vector>

// For the tests of the CUDA kernels themselves: they skip where there is nothing to run them on,
// and compare with TF32 off.
#define SKIP_WITHOUT_CUDA_KERNELS()                                                         \
  if (!kernels::cuda_kernels_built()) GTEST_SKIP() << "this build has no CUDA kernels";     \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";                       \
  at::globalContext().setAllowTF32CuDNN(false);                                             \
  at::globalContext().setAllowTF32CuBLAS(false)

namespace sg2::ops::test {

// The storage types of the CUDA kernels, each with the error allowed against a float32 definition.
struct Precision {
  at::ScalarType type;
  double tolerance;  // relative to the largest output: a few units in the last place of the type
};
inline const std::vector<Precision> kPrecisions{{at::kFloat, 2e-6}, {at::kHalf, 2e-3}, {at::kBFloat16, 1.6e-2}};

// Restores the CPU level at the end of a test.
struct LevelGuard {
  cpu::Level saved = cpu::cpu_level();
  ~LevelGuard() { cpu::force_cpu_level(saved); }
};

// max |a - b| / max |b|, in double precision.
inline double max_relative_error(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() / std::max(scale, 1e-30);
}

// upfirdn2d from its definition: zero-insertion upsampling, padding, true convolution with f (or
// correlation with flip_filter), times gain, then keeping every down-th sample. Double precision.
inline at::Tensor upfirdn2d_direct(const at::Tensor& x_in, const at::Tensor& f_in, const ops::FirParams& p) {
  const at::Tensor x = x_in.cpu().to(at::kDouble), f = f_in.cpu().to(at::kDouble);
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), kh = f.size(0), kw = f.size(1);
  const auto [px0, px1, py0, py1] = p.padding;
  const int64_t oh = (h * p.up + py0 + py1 - kh) / p.down + 1, ow = (w * p.up + px0 + px1 - kw) / p.down + 1;
  at::Tensor y = at::zeros({n, c, oh, ow}, at::kDouble);
  auto X = x.accessor<double, 4>();
  auto F = f.accessor<double, 2>();
  auto Y = y.accessor<double, 4>();
  auto sample = [&](int64_t b, int64_t ch, int64_t ty, int64_t tx) {  // padded, upsampled signal z[t]
    const int64_t vy = ty - py0, vx = tx - px0;
    if (vy < 0 || vx < 0 || vy >= h * p.up || vx >= w * p.up || vy % p.up || vx % p.up) return 0.0;
    return X[b][ch][vy / p.up][vx / p.up];
  };
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double sum = 0;
          for (int64_t ky = 0; ky < kh; ++ky)
            for (int64_t kx = 0; kx < kw; ++kx) {
              const double tap = p.flip_filter ? F[ky][kx] : F[kh - 1 - ky][kw - 1 - kx];
              sum += tap * sample(b, ch, oy * p.down + ky, ox * p.down + kx);
            }
          Y[b][ch][oy][ox] = sum * p.gain;
        }
  return y;
}

// FIR cases covering every branch of the kernels.
inline std::vector<ops::FirParams> fir_cases() {
  return {
      {1, 1, {1, 2, 2, 1}, false, 1.0},    // filter with asymmetric padding
      {2, 1, {2, 1, 2, 1}, false, 4.0},    // upsample2d
      {1, 2, {1, 1, 1, 1}, false, 1.0},    // downsample2d
      {2, 1, {0, 0, 0, 0}, true, 4.0},     // flip_filter
      {1, 2, {-1, 2, 3, -1}, false, 2.0},  // cropping
      {2, 2, {1, 0, 0, 1}, false, 1.0},    // up and down
  };
}

// A 4x4 filter without symmetry, so that flips and transposes show.
inline at::Tensor asymmetric_filter() {
  return at::tensor({1.f, 2.f, 3.f, 4.f, 0.5f, -1.f, 2.f, 1.f, 3.f, 1.f, 0.f, 2.f, 1.f, 1.f, -2.f, 0.25f}).reshape({4, 4});
}

}  // namespace sg2::ops::test
