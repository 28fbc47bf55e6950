#pragma once
// Distances between feature distributions, in float64.
//
//   FID = |mu1 - mu2|^2 + tr(S1 + S2 - 2 (S1 S2)^(1/2)).
// tr((S1 S2)^(1/2)) is computed from factors S1 = F1^T F1, S2 = F2^T F2 (symmetric eigendecompositions,
// F = diag(sqrt(lambda)) V^T, eigenvalues within round-off of zero set to zero) as the sum of the
// singular values of F2 F1^T: the eigenvalues of S1 S2 are the squared singular values of F2 F1^T.
// Each square root is taken once, of an eigenvalue, so this stays accurate when the covariances are
// nearly singular (fewer samples than features), where scipy's sqrtm of the non-symmetric S1 S2 (the
// reference's) picks up imaginary parts and square roots of round-off.
//
//   KID: the unbiased MMD^2 with the polynomial kernel k(x, y) = (x.y / d + 1)^3, averaged over
// `num_subsets` random subsets of min(n_real, n_fake, max_subset_size) features of each side
// (as stylegan2-ada-pytorch's kernel_inception_distance.py; the subsets come from `seed`).

#include <ATen/ATen.h>

namespace sg2::metrics {

double frechet_distance(const at::Tensor& mu1, const at::Tensor& sigma1, const at::Tensor& mu2,
                        const at::Tensor& sigma2);

double kernel_inception_distance(const at::Tensor& real_features, const at::Tensor& fake_features,
                                 int64_t num_subsets = 100, int64_t max_subset_size = 1000, uint64_t seed = 0);

}  // namespace sg2::metrics
