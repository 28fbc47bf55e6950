#include "sg2/metrics/distance.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"

#include <algorithm>
#include <limits>

namespace sg2::metrics {

namespace {

at::Tensor symmetric(const at::Tensor& m) { return (m + m.transpose(0, 1)) * 0.5; }

void check_covariance(const at::Tensor& sigma, int64_t dim, const char* which) {
  SG2_CHECK(sigma.dim() == 2 && sigma.size(0) == dim && sigma.size(1) == dim,
            "{} covariance has shape {}, expected [{}, {}]", which, sigma.sizes(), dim, dim);
}

// Rows of `features` at the first `count` indices of a seeded permutation (sampling without replacement).
at::Tensor sample_rows(const at::Tensor& features, int64_t count, uint64_t seed) {
  std::vector<int64_t> order = seeded_permutation(features.size(0), seed);
  order.resize(static_cast<size_t>(count));
  return features.index_select(0, at::tensor(order, at::kLong).to(features.device()));
}

// F with S = F^T F (F = diag(sqrt(lambda)) V^T); eigenvalues within round-off of zero are zero.
at::Tensor psd_factor(const at::Tensor& covariance) {
  auto [eigenvalues, eigenvectors] = at::linalg_eigh(symmetric(covariance));
  const double largest = eigenvalues.abs().max().item<double>();
  const double round_off = largest * static_cast<double>(covariance.size(0)) * std::numeric_limits<double>::epsilon();
  const at::Tensor roots = at::where(eigenvalues > round_off, eigenvalues, at::zeros_like(eigenvalues)).sqrt();
  return (eigenvectors * roots.unsqueeze(0)).transpose(0, 1);
}

}  // namespace

double frechet_distance(const at::Tensor& mu1, const at::Tensor& sigma1, const at::Tensor& mu2,
                        const at::Tensor& sigma2) {
  SG2_CHECK(mu1.dim() == 1 && mu2.sizes() == mu1.sizes(), "means have shapes {} and {}, expected equal [D]",
            mu1.sizes(), mu2.sizes());
  const int64_t dim = mu1.size(0);
  check_covariance(sigma1, dim, "first");
  check_covariance(sigma2, dim, "second");
  const at::Tensor s1 = sigma1.to(at::kDouble), s2 = sigma2.to(at::kDouble);
  const double mean_term = (mu1.to(at::kDouble) - mu2.to(at::kDouble)).square().sum().item<double>();
  const at::Tensor f1 = psd_factor(s1), f2 = psd_factor(s2);
  const double trace_sqrt = at::linalg_svdvals(at::matmul(f2, f1.transpose(0, 1))).sum().item<double>();
  return mean_term + s1.trace().item<double>() + s2.trace().item<double>() - 2 * trace_sqrt;
}

double kernel_inception_distance(const at::Tensor& real_features, const at::Tensor& fake_features,
                                 int64_t num_subsets, int64_t max_subset_size, uint64_t seed) {
  SG2_CHECK(real_features.dim() == 2 && fake_features.dim() == 2 && real_features.size(1) == fake_features.size(1),
            "KID needs features [N, D] of equal D, got {} and {}", real_features.sizes(), fake_features.sizes());
  const int64_t m = std::min({real_features.size(0), fake_features.size(0), max_subset_size});
  SG2_CHECK(m >= 2, "KID needs at least 2 features per side, got {} real and {} fake", real_features.size(0),
            fake_features.size(0));
  const double d = static_cast<double>(real_features.size(1));
  const at::Tensor reals = real_features.to(at::kDouble), fakes = fake_features.to(at::kDouble);
  const auto kernel = [d](const at::Tensor& a, const at::Tensor& b) {  // [m, D], [m, D] -> [m, m]
    return (at::matmul(a, b.transpose(0, 1)) / d + 1).pow(3);
  };
  double total = 0;
  for (int64_t subset = 0; subset < num_subsets; ++subset) {
    const at::Tensor x = sample_rows(fakes, m, mix_seed({seed, 0x6b6964, static_cast<uint64_t>(subset), 0}));
    const at::Tensor y = sample_rows(reals, m, mix_seed({seed, 0x6b6964, static_cast<uint64_t>(subset), 1}));
    const at::Tensor a = kernel(x, x) + kernel(y, y);
    const double off_diagonal = (a.sum() - a.diagonal().sum()).item<double>();
    total += off_diagonal / static_cast<double>(m - 1) - kernel(x, y).sum().item<double>() * 2 / static_cast<double>(m);
  }
  return total / static_cast<double>(num_subsets) / static_cast<double>(m);
}

}  // namespace sg2::metrics
