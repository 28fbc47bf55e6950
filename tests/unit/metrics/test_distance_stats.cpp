// FID and KID against closed forms and independent computations; feature statistics and their cache.
#include "test_support.h"

#include "sg2/metrics/distance.h"
#include "sg2/metrics/evaluator.h"
#include "sg2/metrics/feature_stats.h"

#include <cmath>
#include <fstream>

namespace sg2::metrics {
namespace {

at::Tensor random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  at::Generator generator = at::detail::createCPUGenerator(seed);
  return at::randn({rows, cols}, generator, at::kDouble);
}

// A positive semi-definite [D, D] covariance of `samples` random points (singular when samples < D).
at::Tensor random_covariance(int64_t dim, int64_t samples, uint64_t seed) {
  const at::Tensor x = random_matrix(samples, dim, seed);
  return at::matmul(x.transpose(0, 1), x) / static_cast<double>(samples);
}

double relative_error(double value, double expected) { return std::abs(value - expected) / std::abs(expected); }

TEST(FrechetDistance, EqualDistributionsGiveZero) {
  for (int64_t samples : {50, 400}) {  // singular and full-rank covariances
    const at::Tensor sigma = random_covariance(128, samples, 1);
    const at::Tensor mu = random_matrix(1, 128, 2).squeeze(0);
    EXPECT_NEAR(frechet_distance(mu, sigma, mu, sigma), 0.0, 1e-6) << samples << " samples";
  }
}

TEST(FrechetDistance, DiagonalGaussiansGiveTheClosedForm) {
  const at::Tensor mu1 = at::tensor({0.0, 1.0, -2.0, 3.5}, at::kDouble), mu2 = at::tensor({1.0, 1.0, 0.0, 0.5}, at::kDouble);
  const at::Tensor var1 = at::tensor({1.0, 4.0, 0.25, 9.0}, at::kDouble), var2 = at::tensor({2.0, 1.0, 0.25, 1e-8}, at::kDouble);
  const double expected = (mu1 - mu2).square().sum().item<double>() +
                          (var1 + var2 - 2 * (var1 * var2).sqrt()).sum().item<double>();
  EXPECT_LT(relative_error(frechet_distance(mu1, at::diag(var1), mu2, at::diag(var2)), expected), 1e-12);
}

// tr((S1 S2)^(1/2)) another way: with S1 = A^T A and S2 = B^T B it is the sum of the singular values
// of B A^T, which needs neither matrix square roots nor symmetric eigenvalues.
TEST(FrechetDistance, MatchesSingularValuesOfFactorsForLargeNearlySingularCovariances) {
  const int64_t dim = 512;
  for (int64_t samples : {200, 2000}) {
    const at::Tensor a = random_matrix(samples, dim, 3) / std::sqrt(static_cast<double>(samples));
    const at::Tensor b = (random_matrix(samples, dim, 4) * 0.5 + 0.1) / std::sqrt(static_cast<double>(samples));
    const at::Tensor s1 = at::matmul(a.transpose(0, 1), a), s2 = at::matmul(b.transpose(0, 1), b);
    const at::Tensor mu1 = random_matrix(1, dim, 5).squeeze(0), mu2 = random_matrix(1, dim, 6).squeeze(0);
    const double nuclear = at::linalg_svdvals(at::matmul(b, a.transpose(0, 1))).sum().item<double>();
    const double expected =
        (mu1 - mu2).square().sum().item<double>() + s1.trace().item<double>() + s2.trace().item<double>() - 2 * nuclear;
    EXPECT_LT(relative_error(frechet_distance(mu1, s1, mu2, s2), expected), 1e-9) << samples << " samples";
    if (samples > dim) {  // full rank: the eigenvalues of S1 S2 are real and positive
      const double via_eigenvalues = at::real(at::linalg_eigvals(at::matmul(s1, s2))).clamp_min(0).sqrt().sum().item<double>();
      EXPECT_LT(relative_error(via_eigenvalues, nuclear), 1e-9);
    }
  }
}

TEST(FrechetDistance, RejectsMismatchedShapes) {
  const at::Tensor mu = at::zeros({3}, at::kDouble), sigma = at::eye(3, at::kDouble);
  EXPECT_NE(test::error_message([&] { frechet_distance(mu, sigma, at::zeros({4}, at::kDouble), sigma); }), "");
  EXPECT_NE(test::error_message([&] { frechet_distance(mu, sigma, mu, at::eye(4, at::kDouble)); }), "");
}

// The unbiased MMD^2 written out with loops over all pairs.
double kid_by_loops(const at::Tensor& x, const at::Tensor& y) {
  const int64_t m = x.size(0);
  const double d = static_cast<double>(x.size(1));
  const auto k = [d](const at::Tensor& u, const at::Tensor& v) { return std::pow(u.dot(v).item<double>() / d + 1, 3); };
  double xx = 0, yy = 0, xy = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      if (i != j) {
        xx += k(x[i], x[j]);
        yy += k(y[i], y[j]);
      }
      xy += k(x[i], y[j]);
    }
  }
  return (xx + yy) / (m * (m - 1.0)) - 2 * xy / (static_cast<double>(m) * m);
}

TEST(KernelInceptionDistance, WholeSetsMatchThePairwiseFormula) {
  const at::Tensor reals = random_matrix(24, 16, 7), fakes = random_matrix(24, 16, 8) * 1.5 + 0.3;
  // Subsets as large as the sets are permutations of them: the estimator equals the whole-set value.
  const double kid = kernel_inception_distance(reals, fakes, 3, 1000, 0);
  EXPECT_LT(relative_error(kid, kid_by_loops(fakes, reals)), 1e-9);
}

TEST(KernelInceptionDistance, SameDistributionIsNearZeroAndShiftIsNot) {
  const at::Tensor a = random_matrix(600, 32, 9), b = random_matrix(600, 32, 10);
  const double same = kernel_inception_distance(a, b, 20, 200, 1);
  const double shifted = kernel_inception_distance(a, b + 0.5, 20, 200, 1);
  EXPECT_LT(std::abs(same), 0.02);
  EXPECT_GT(shifted, 20 * std::abs(same));
}

TEST(FeatureStats, MeanAndCovarianceAreThePopulationMoments) {
  const at::Tensor x = random_matrix(300, 10, 11).to(at::kFloat);
  FeatureStats stats(250, true, true);
  stats.append(x.narrow(0, 0, 100));
  stats.append(x.narrow(0, 100, 200));  // only 150 of these fit
  ASSERT_TRUE(stats.is_full());
  const at::Tensor kept = x.narrow(0, 0, 250).to(at::kDouble);
  const at::Tensor centered = kept - kept.mean(0);
  EXPECT_TRUE(at::allclose(stats.mean(), kept.mean(0), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(stats.covariance(), at::matmul(centered.transpose(0, 1), centered) / 250.0, 1e-10, 1e-10));
  EXPECT_TRUE(at::equal(stats.all(), x.narrow(0, 0, 250)));
  EXPECT_NE(test::error_message([&] { stats.append(at::zeros({2, 11})); }), "");
}

TEST(FeatureStats, CacheRoundTripsAndRejectsOtherKeysAndDamagedFiles) {
  test::TempDir dir;
  const at::Tensor x = random_matrix(40, 6, 12).to(at::kFloat);
  FeatureStats stats(40, true, true);
  stats.append(x);
  const std::string path = dir.file("cache/stats.pt");
  stats.save(path, "key A");
  FeatureStats loaded(40, true, true);
  ASSERT_TRUE(loaded.load(path, "key A"));
  EXPECT_TRUE(at::equal(loaded.mean(), stats.mean()));
  EXPECT_TRUE(at::equal(loaded.covariance(), stats.covariance()));
  EXPECT_TRUE(at::equal(loaded.all(), x));
  FeatureStats other(40, true, true);
  EXPECT_FALSE(other.load(path, "key B"));
  EXPECT_FALSE(other.load(dir.file("missing.pt"), "key A"));
  std::ofstream(path, std::ios::trunc) << "not a pickle";
  EXPECT_FALSE(other.load(path, "key A"));
  EXPECT_EQ(other.count(), 0);
}

TEST(MetricNames, ParseCountsAndRealSets) {
  const MetricSpec fid = parse_metric("fid50k_full");
  EXPECT_EQ(fid.kind, MetricSpec::Kind::FID);
  EXPECT_EQ(fid.num_fakes, 50000);
  EXPECT_EQ(fid.max_reals, 0);
  const MetricSpec kid = parse_metric("kid500");
  EXPECT_EQ(kid.kind, MetricSpec::Kind::KID);
  EXPECT_EQ(kid.num_fakes, 500);
  EXPECT_EQ(kid.max_reals, 500);
  EXPECT_NE(test::error_message([] { parse_metric("fid50k_ful"); }).find("fid<N>[k][_full]"), std::string::npos);
  EXPECT_NE(test::error_message([] { parse_metric("ppl50k"); }), "");  // the reference has no such name
  // Counts that would overflow, or generate for years, are refused by name, not wrapped around.
  EXPECT_NE(test::error_message([] { parse_metric("fid9223372036854776k"); }).find("is more than the 1000000000"),
            std::string::npos);
  EXPECT_NE(test::error_message([] { parse_metric("fid99999999999999999999k"); }).find("fid99999999999999999999k"),
            std::string::npos);
  EXPECT_NE(test::error_message([] { parse_metric("pr2000000k3"); }).find("is more than"), std::string::npos);
  EXPECT_EQ(parse_metric("fid1000000k").num_fakes, 1'000'000'000);
}

// FID from fewer samples than features (a singular covariance) says so; counts at or above the
// feature dimension on both sides do not.
TEST(MetricNames, FewSamplesWarningNamesTheCountsBelowTheFeatureDimension) {
  EXPECT_EQ(few_samples_warning("fid50k_full", 70000, 50000, 2048), "");
  EXPECT_EQ(few_samples_warning("fid2k", 2048, 2048, 2048), "");
  const std::string few_reals = few_samples_warning("fid50k_full", 1336, 50000, 2048);
  EXPECT_NE(few_reals.find("fid50k_full compares 50000 fakes with 1336 reals in the detector's 2048 features"),
            std::string::npos) << few_reals;
  const std::string few_fakes = few_samples_warning("fid1k_full", 70000, 1000, 2048);
  EXPECT_NE(few_fakes.find("1000 fakes with 70000 reals"), std::string::npos) << few_fakes;
}

}  // namespace
}  // namespace sg2::metrics
