// Precision and recall (precision_recall.h): hand-counted fractions on points of a line, the
// streamed blocks against the whole-matrix reference, the GPU against the CPU, the metric names, and
// the errors.
#include "sg2/distributed/communicator.h"
#include "sg2/metrics/evaluator.h"
#include "sg2/metrics/precision_recall.h"

#include "test_support.h"

#include <gtest/gtest.h>
#include <torch/cuda.h>

namespace sg2::metrics {
namespace {

// [n, 2]: the points (x, 0).
at::Tensor on_a_line(const std::vector<float>& xs) {
  const at::Tensor x = at::tensor(xs, at::kFloat);
  return at::stack({x, at::zeros_like(x)}, 1);
}

TEST(PrecisionRecall, PointsOnALineGiveTheCountedFractions) {
  auto comm = dist::local_communicator(at::kCPU);
  const at::Tensor reals = on_a_line({0, 1, 2, 3, 4});
  // nhood 1: every real's radius is 1 (its nearest neighbour). Fake 0.5 lies within it, fake 100 does
  // not: precision 1/2. Each fake's radius is 99.5 (the other fake), which covers every real: recall 1.
  for (const PrecisionRecallBlocks blocks : {PrecisionRecallBlocks{}, PrecisionRecallBlocks{2, 2}}) {
    const PrecisionRecall pr = precision_recall(*comm, reals, on_a_line({0.5, 100}), 1, blocks);
    EXPECT_EQ(pr.precision, 0.5);
    EXPECT_EQ(pr.recall, 1.0);
  }
  // nhood 2: real 4's radius is 2 (its second neighbour, 2), real 2's is 1. Fake 6 lies on real 4's
  // sphere (inside: the reference compares with <=), fake 6.5 beyond it, fake 2.9 inside real 3's
  // ball: precision 2/3. The fakes' radii (second neighbour among 6, 6.5, 2.9) are 3.1, 3.6 and
  // 3.6, which reach reals 3 and 4 from fake 6 and reals 0 to 4 from fake 2.9: recall 1.
  const at::Tensor fakes = on_a_line({6, 6.5, 2.9});
  const PrecisionRecall pr = precision_recall(*comm, reals, fakes, 2, PrecisionRecallBlocks{2, 2});
  EXPECT_NEAR(pr.precision, 2.0 / 3.0, 1e-15);
  EXPECT_EQ(pr.recall, 1.0);
  const PrecisionRecall reference = precision_recall_reference(reals, fakes, 2);
  EXPECT_EQ(reference.precision, pr.precision);
  EXPECT_EQ(reference.recall, pr.recall);
}

TEST(PrecisionRecall, BlocksOfAnySizeMatchTheWholeMatrices) {
  auto comm = dist::local_communicator(at::kCPU);
  at::Generator rng = at::detail::createCPUGenerator(17);
  const at::Tensor reals = at::randn({300, 16}, rng);         // [300, 16]
  const at::Tensor fakes = at::randn({200, 16}, rng) * 0.8 + 0.6;  // narrower and shifted: fractions inside (0, 1)
  for (const int64_t nhood : {1, 3, 5}) {
    const PrecisionRecall reference = precision_recall_reference(reals, fakes, nhood);
    EXPECT_GT(reference.precision, 0.05);
    EXPECT_LT(reference.precision, 0.95);
    EXPECT_GT(reference.recall, 0.05);
    EXPECT_LT(reference.recall, 0.95);
    for (const PrecisionRecallBlocks blocks : {PrecisionRecallBlocks{7, 5}, PrecisionRecallBlocks{64, 1000},
                                               PrecisionRecallBlocks{}}) {
      // A distance computed in another block shape may differ in its last bit: at most one point could
      // change sides.
      const PrecisionRecall pr = precision_recall(*comm, reals, fakes, nhood, blocks);
      EXPECT_NEAR(pr.precision, reference.precision, 1.0 / 200 + 1e-12) << nhood << ", " << blocks.rows;
      EXPECT_NEAR(pr.recall, reference.recall, 1.0 / 300 + 1e-12) << nhood << ", " << blocks.rows;
    }
  }
  // A larger neighbourhood makes every ball larger: neither fraction falls.
  const PrecisionRecall near = precision_recall(*comm, reals, fakes, 1), far = precision_recall(*comm, reals, fakes, 5);
  EXPECT_GT(far.precision, near.precision);
  EXPECT_GT(far.recall, near.recall);
}

TEST(PrecisionRecall, FeaturesAreRoundedToFloat16AsTheReferenceKeepsThem) {
  auto comm = dist::local_communicator(at::kCPU);
  // 2049 and 2050 are one float16 apart at 2048 (spacing 2): 2049 rounds to 2048, so the fake lands on
  // real 2048 exactly and falls inside a radius of 0; in float32 it would lie outside.
  const at::Tensor reals = on_a_line({2048, 2048, 0, 0});
  const PrecisionRecall pr = precision_recall(*comm, reals, on_a_line({2049, 0, 5}), 1);
  EXPECT_NEAR(pr.precision, 2.0 / 3.0, 1e-15);
}

TEST(PrecisionRecall, TheGpuCountsAsTheCpu) {
  if (!at::hasCUDA() || !torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  auto on_cpu = dist::local_communicator(at::kCPU);
  auto on_gpu = dist::local_communicator(at::Device(at::kCUDA, 0));
  at::Generator rng = at::detail::createCPUGenerator(23);
  const at::Tensor reals = at::randn({3000, 64}, rng);            // [3000, 64]: several blocks of rows
  const at::Tensor fakes = at::randn({2000, 64}, rng) + 0.3;  // [2000, 64]: both fractions near 0.4
  const PrecisionRecallBlocks blocks{1024, 1500};
  const PrecisionRecall cpu = precision_recall(*on_cpu, reals, fakes, 3, blocks);
  const PrecisionRecall gpu = precision_recall(*on_gpu, reals.cuda(), fakes.cuda(), 3, blocks);
  // Another device's matrix products round differently: a few points on a sphere may change sides.
  EXPECT_NEAR(gpu.precision, cpu.precision, 3.0 / 2000) << "cpu " << cpu.precision;
  EXPECT_NEAR(gpu.recall, cpu.recall, 3.0 / 3000) << "cpu " << cpu.recall;
  EXPECT_GT(cpu.precision, 0.1);
  EXPECT_LT(cpu.precision, 0.9);
}

TEST(PrecisionRecall, TooFewFeaturesNameTheNeighbourhood) {
  auto comm = dist::local_communicator(at::kCPU);
  const std::string message =
      test::error_message([&] { precision_recall(*comm, on_a_line({0, 1, 2}), on_a_line({0, 1}), 2); });
  EXPECT_NE(message.find("neighbourhood 2 needs more than 2 features on each side, got 3 reals and 2 fakes"),
            std::string::npos)
      << message;
  EXPECT_NE(test::error_message([&] { precision_recall(*comm, at::zeros({4, 3}), at::zeros({4, 2}), 1); })
                .find("one D"),
            std::string::npos);
}

TEST(MetricNames, PrecisionRecallTakesItsNeighbourhoodFromTheLastDigit) {
  const MetricSpec full = parse_metric("pr50k3_full");
  EXPECT_EQ(full.kind, MetricSpec::Kind::PR);
  EXPECT_EQ(full.num_fakes, 50000);
  EXPECT_EQ(full.nhood, 3);
  EXPECT_EQ(full.max_reals, kPrecisionRecallMaxReals);
  const MetricSpec small = parse_metric("pr5005");
  EXPECT_EQ(small.num_fakes, 500);
  EXPECT_EQ(small.nhood, 5);
  EXPECT_EQ(small.max_reals, 500);
  EXPECT_NE(test::error_message([] { parse_metric("pr50k"); }).find("pr<N>[k]<nhood>[_full]"), std::string::npos);
  EXPECT_NE(test::error_message([] { parse_metric("pr50k0"); }), "");
  EXPECT_NE(test::error_message([] { parse_metric("pr33"); }).find("more generated images than its neighbourhood"),
            std::string::npos);
}

}  // namespace
}  // namespace sg2::metrics
