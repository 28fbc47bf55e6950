// The Inception Score and perceptual path length: the score against a plain loop over the
// reference's formula and its known extremes, the percentile filter against numpy's, slerp, the
// path-length sampler against the steps computed here by hand (crop, scale, LPIPS, epsilon), and
// both metrics through the evaluator with the stand-in detector files.
#include "test_support.h"

#include "sg2/data/synthetic.h"
#include "sg2/distributed/communicator.h"
#include "sg2/metrics/evaluator.h"
#include "sg2/metrics/generator_metrics.h"
#include "sg2/nn/state_dict.h"
#include "standin_detectors.h"

#include <cmath>

namespace sg2::metrics {
namespace {

// exp(mean_x sum_k p log(p / mean_x p)) per split, mean and population std: written out as loops.
std::pair<double, double> inception_score_by_loops(const at::Tensor& probabilities, int64_t splits) {
  const auto p = probabilities.accessor<double, 2>();
  const int64_t n = probabilities.size(0), k = probabilities.size(1);
  std::vector<double> scores;
  for (int64_t s = 0; s < splits; ++s) {
    const int64_t lo = s * n / splits, hi = (s + 1) * n / splits;
    std::vector<double> marginal(k, 0.0);
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t j = 0; j < k; ++j) marginal[j] += p[i][j] / static_cast<double>(hi - lo);
    double kl = 0;
    for (int64_t i = lo; i < hi; ++i)
      for (int64_t j = 0; j < k; ++j) kl += p[i][j] * std::log(p[i][j] / marginal[j]) / static_cast<double>(hi - lo);
    scores.push_back(std::exp(kl));
  }
  double mean = 0, var = 0;
  for (double x : scores) mean += x / static_cast<double>(splits);
  for (double x : scores) var += (x - mean) * (x - mean) / static_cast<double>(splits);
  return {mean, std::sqrt(var)};
}

TEST(InceptionScore, MatchesTheFormulaAndItsExtremes) {
  at::manual_seed(0);
  const at::Tensor p = at::softmax(at::randn({23, 5}, at::kDouble) * 2, 1);
  const auto [mean, std] = inception_score(p, 4);
  const auto [loop_mean, loop_std] = inception_score_by_loops(p, 4);
  EXPECT_NEAR(mean, loop_mean, 1e-12);
  EXPECT_NEAR(std, loop_std, 1e-12);
  EXPECT_NEAR(inception_score(at::full({20, 7}, 1.0 / 7), 2).first, 1.0, 1e-12);  // no information
  const at::Tensor confident = at::eye(8, at::kDouble).repeat({3, 1});               // every class, certain
  EXPECT_NEAR(inception_score(confident.clamp_min(1e-30), 3).first, 8.0, 1e-9);
}

TEST(PathLength, KeepsTheDistancesBetweenNumpysPercentiles) {
  std::vector<double> values;
  for (int64_t i = 0; i < 203; ++i) values.push_back(static_cast<double>((i * 7919) % 1009));
  values.insert(values.end(), {5e4, 7e4, -3.0});
  // numpy: d[(d >= percentile(d, 1, 'lower')) & (d <= percentile(d, 99, 'higher'))].mean()
  EXPECT_NEAR(path_length_mean(at::tensor(values, at::kDouble)), 509.6039603960396, 1e-9);
  EXPECT_EQ(path_length_mean(at::arange(100, at::kDouble)), 49.5);  // 0 and 99 are the percentiles: all kept
}

TEST(PathLength, SlerpFollowsTheGreatCircle) {
  const auto row = [](double x, double y) { return at::tensor({x, y}, at::kDouble).view({1, 2}); };
  const at::Tensor a = row(3, 0), b = row(0, 0.5);
  EXPECT_TRUE(slerp(a, b, at::zeros({1, 1}, at::kDouble)).allclose(row(1, 0), 1e-6, 1e-6));
  EXPECT_TRUE(slerp(a, b, at::ones({1, 1}, at::kDouble)).allclose(row(0, 1), 1e-6, 1e-6));
  const double h = std::sqrt(0.5);
  EXPECT_TRUE(slerp(a, b, at::full({1, 1}, 0.5, at::kDouble)).allclose(row(h, h), 1e-6, 1e-6));
}

nn::GeneratorOptions tiny_generator(int64_t resolution) {
  nn::GeneratorOptions g;
  g.z_dim = g.w_dim = 8;
  g.img_resolution = resolution;
  g.img_channels = 1;
  g.channel_base = 64;
  g.channel_max = 8;
  g.mapping_layers = 2;
  return g;
}

TEST(PathLength, SamplerComputesTheReferenceSteps) {
  test::TempDir dir;
  test::write_standin_vgg16(dir.file("vgg16.pt"), 1);
  auto vgg16 = load_torchscript_detector(dir.file("vgg16.pt"), at::kCPU);
  at::manual_seed(2);
  nn::Generator G(tiny_generator(16));
  for (auto& [name, p] : nn::named_parameters(G)) {
    if (name.find("noise_strength") != std::string::npos) p.detach().zero_();  // noise then plays no part
  }
  const at::Tensor z0 = at::randn({3, 8}), z1 = at::randn({3, 8}), t = at::rand({3}), c = at::zeros({3, 0});
  PathLengthOptions options;
  options.w_space = true;
  options.full = true;
  PathLengthSampler sampler(G, *vgg16, options, 0, {});
  const at::Tensor got = sampler.distances_of(z0, z1, t, c, 1);  // [3, 1]
  // By hand: lerp in W at t and t + eps, const rendering, rows 3/8..7/8 and columns 2/8..6/8, [0, 255], 3 channels.
  at::NoGradGuard no_grad;
  const at::Tensor w0 = G.mapping->forward(z0, c, {}), w1 = G.mapping->forward(z1, c, {});
  const auto render = [&](const at::Tensor& tt) {
    nn::SynthesisRun run;
    run.noise_mode = nn::NoiseMode::None;
    const at::Tensor img = G.synthesis->forward(w0.lerp(w1, tt.view({-1, 1, 1})), run).narrow(2, 6, 8).narrow(3, 4, 8);
    return vgg16->lpips_features(((img + 1) * 127.5).repeat({1, 3, 1, 1}));
  };
  const at::Tensor expected = (render(t) - render(t + 1e-4)).square().sum(1, true) / 1e-8;
  // A finite difference at epsilon 1e-4 in float32: the order of operations shows at ~1e-3.
  EXPECT_TRUE(got.allclose(expected, 2e-2, 1e-4)) << got << expected;
  EXPECT_GT(expected.min().item<double>(), 0.0);
}

TEST(GeneratorMetrics, EvaluatorGivesIsAndPplWhateverTheBlockOwner) {
  test::TempDir dir;
  test::write_standin_inception(dir.file("inception.pt"), 3);
  test::write_standin_vgg16(dir.file("vgg16.pt"), 4);
  auto reals = std::make_shared<data::SyntheticDataset>(16, 16, 1, 0);
  auto comm = dist::local_communicator(at::kCPU);
  at::manual_seed(5);
  nn::Generator G(tiny_generator(16));
  EvaluationOptions options;
  options.batch = 5;  // blocks of 5: pairs of samples straddle blocks
  options.show_progress = false;
  const auto evaluate = [&](const std::string& file, const std::string& metric) {
    MetricEvaluator evaluator(*comm, load_torchscript_detector(dir.file(file), at::kCPU), reals, {}, options);
    return evaluator.evaluate(parse_metric(metric), G);
  };
  const MetricResult is = evaluate("inception.pt", "is20");
  ASSERT_EQ(is.values.size(), 2u);
  EXPECT_EQ(is.values[0].first, "is20_mean");
  EXPECT_GT(is.values[0].second, 1.0);
  EXPECT_LT(is.values[0].second, 16.0);
  EXPECT_EQ(is.num_fakes, 20);
  const MetricResult ppl = evaluate("vgg16.pt", "ppl2_zfull_12");
  ASSERT_EQ(ppl.values.size(), 1u);
  EXPECT_GT(ppl.values[0].second, 0.0);
  EXPECT_EQ(ppl.values[0].second, evaluate("vgg16.pt", "ppl2_zfull_12").values[0].second);  // reproducible
  const std::string wrong = test::error_message([&] { evaluate("inception.pt", "ppl_wend_4"); });
  EXPECT_NE(wrong.find("return_lpips=True"), std::string::npos) << wrong;
}

TEST(GeneratorMetrics, NamesParseAsTheReferences) {
  const MetricSpec wend = parse_metric("ppl_wend");
  EXPECT_EQ(wend.kind, MetricSpec::Kind::PPL);
  EXPECT_EQ(wend.num_fakes, 50000);
  EXPECT_TRUE(wend.path_length.w_space && wend.path_length.crop && !wend.path_length.full);
  const MetricSpec v2 = parse_metric("ppl2_wend");
  EXPECT_FALSE(v2.path_length.crop);
  const MetricSpec zfull = parse_metric("ppl_zfull_2k");
  EXPECT_TRUE(!zfull.path_length.w_space && zfull.path_length.full);
  EXPECT_EQ(zfull.num_fakes, 2000);
  EXPECT_EQ(parse_metric("is50k").num_fakes, 50000);
  EXPECT_EQ(parse_metric("is50k").kind, MetricSpec::Kind::IS);
  EXPECT_NE(test::error_message([] { parse_metric("is5"); }).find("at least 10"), std::string::npos);
  EXPECT_NE(test::error_message([] { parse_metric("ppl_xend"); }).find("ppl[2]_{z,w}{full,end}"), std::string::npos);
}

}  // namespace
}  // namespace sg2::metrics
