#pragma once
// Helpers shared by the nn unit tests.

#include <ATen/ATen.h>

#include <algorithm>

namespace sg2::nn::test {

// max |a - b| / max |b|, in double precision.
inline double max_relative_error(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>() / std::max(scale, 1e-30);
}

}  // namespace sg2::nn::test
