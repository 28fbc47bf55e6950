// run.cuda_graphs (train/phase_graphs.h): the statistics a captured phase reports, the inputs its
// replays copy in, the settings it refuses, the reseeded pass generators of dist.rng global; on a
// GPU, training with graphs against training without.
#include "sg2/core/error.h"
#include "sg2/device/device_graph.h"
#include "sg2/train/phase_graphs.h"
#include "sg2/train/trainer.h"
#include "test_support.h"
#include "tiny_config.h"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>

namespace sg2::train {
namespace {

// A graph's reports are recorded, not added; adding the recorded moments after each "replay" gives
// what reporting every time gives. The accumulator is a copy: the graph's outputs change under it.
TEST(StatsCollector, RecordedMomentsAddUpAsTheReportsWould) {
  const at::Tensor first = at::tensor({1.0, 2.0, 4.0}), second = at::tensor({-3.0, 0.5});
  StatsCollector reported;
  reported.report("Loss/x", first);
  reported.report("Loss/x", second);

  StatsCollector replayed;
  replayed.start_recording();
  replayed.report("Loss/x", first);
  const StatsCollector::Recorded recorded = replayed.stop_recording();
  ASSERT_EQ(recorded.size(), 1u);
  EXPECT_EQ(recorded[0].first, "Loss/x");
  EXPECT_TRUE(replayed.names().empty());  // recording left the statistics as they were
  at::Tensor graph_output = recorded[0].second;
  replayed.add_moments("Loss/x", graph_output);
  graph_output.copy_(at::stack({at::full({}, 2.0, at::kDouble), second.sum(), second.square().sum()}));  // a replay
  replayed.add_moments("Loss/x", graph_output);

  const StatValue want = reported.finish().at("Loss/x"), got = replayed.finish().at("Loss/x");
  EXPECT_EQ(got.count, 5);
  EXPECT_EQ(got.count, want.count);
  EXPECT_DOUBLE_EQ(got.mean, want.mean);
  EXPECT_DOUBLE_EQ(got.std, want.std);
}

StepInputs inputs_of(double value, int rounds, int phases) {
  StepInputs in;
  for (int r = 0; r < rounds; ++r) {
    in.real_img.push_back(at::full({2, 1, 4, 4}, value));
    in.real_c.push_back(at::zeros({2, 0}));
  }
  for (int p = 0; p < phases; ++p) {
    in.gen_z.emplace_back();
    in.gen_c.emplace_back();
    for (int r = 0; r < rounds; ++r) {
      in.gen_z.back().push_back(at::full({2, 3}, value + p));
      in.gen_c.back().push_back(at::zeros({2, 0}));
    }
  }
  return in;
}

// A replay reads the tensors its graph was captured with: a step's reals and the phase's latents
// are copied into them (the other phases' latents are theirs to copy).
TEST(PhaseGraphs, AReplayCopiesTheStepsRealsAndThePhasesLatentsIn) {
  StepInputs captured = inputs_of(0, 2, 3);
  const at::Tensor captured_reals = captured.real_img[1];
  copy_step_inputs(inputs_of(5, 2, 3), captured, 1);
  EXPECT_TRUE(captured.real_img[1].is_same(captured_reals));  // the same tensors, new values
  EXPECT_TRUE(at::equal(captured.real_img[1], at::full({2, 1, 4, 4}, 5.0)));
  EXPECT_TRUE(at::equal(captured.gen_z[1][0], at::full({2, 3}, 6.0)));
  EXPECT_TRUE(at::equal(captured.gen_z[0][0], at::full({2, 3}, 0.0)));  // phase 0's: untouched
  EXPECT_THROW(copy_step_inputs(inputs_of(5, 3, 3), captured, 1), Error);  // 3 rounds for a graph of 2
}

TEST(PhaseGraphs, RefusedWhereTheyCannotRunNamingWhy) {
  TrainConfig c = test::tiny_config();
  c.run.cuda_graphs = true;
  const std::string on_cpu =
      test::error_message([&] { Trainer trainer(c, open_configured_dataset(c), at::Device(at::kCPU)); });
  EXPECT_NE(on_cpu.find("run.cuda_graphs needs a CUDA device; this run trains on cpu"), std::string::npos) << on_cpu;
  EXPECT_NE(test::error_message([] { DeviceGraph graph(at::Device(at::kCPU)); }).find("CUDA"), std::string::npos);
}

// dist.rng = global keeps each phase's pass generators and reseeds them every step, so that a
// graph can have them registered: a reseeded generator draws what a new one of that seed draws,
// the normal distribution's cached second sample included (an odd count leaves one cached).
TEST(PhaseGraphs, AReseededGeneratorDrawsAsANewOneOfItsSeed) {
  const at::Device cpu(at::kCPU);
  at::Generator kept = make_rng(cpu, 5);
  at::randn({3}, kept, at::kFloat);
  at::randn({1}, kept, at::kDouble);
  {
    std::lock_guard<std::mutex> lock(kept.mutex());
    kept.set_current_seed(9);
  }
  at::Generator fresh = make_rng(cpu, 9);
  for (const auto type : {at::kFloat, at::kDouble}) {
    EXPECT_TRUE(at::equal(at::randn({7}, kept, type), at::randn({7}, fresh, type)));
    EXPECT_TRUE(at::equal(at::rand({5}, kept, type), at::rand({5}, fresh, type)));
  }
  EXPECT_TRUE(at::equal(at::randint(0, 1000, {4}, kept, at::kLong), at::randint(0, 1000, {4}, fresh, at::kLong)));
}

// The same weights, Adam moments and running means (within 1e-3 of each tensor's largest value),
// and the same loss statistics (counts exactly).
void expect_the_same_training(Trainer& eager, Trainer& graphed) {
  EXPECT_TRUE(graphed.all_phases_captured());
  const NamedTensors want = eager.state().saved_tensors(), got = graphed.state().saved_tensors();
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].first, got[i].first);
    const at::Tensor a = want[i].second.to(at::kCPU, at::kDouble), b = got[i].second.to(at::kCPU, at::kDouble);
    const double scale = std::max(a.abs().max().item<double>(), 1e-6);
    EXPECT_LE((a - b).abs().max().item<double>(), 1e-3 * scale) << want[i].first;
  }
  const auto want_stats = eager.stats().finish(), got_stats = graphed.stats().finish();
  for (const auto& [name, value] : want_stats) {
    if (name.rfind("Loss/", 0) != 0) continue;  // timings differ
    ASSERT_TRUE(got_stats.count(name)) << name;
    EXPECT_EQ(got_stats.at(name).count, value.count) << name;
    EXPECT_NEAR(got_stats.at(name).mean, value.mean, 1e-3 * std::max(1.0, std::abs(value.mean))) << name;
  }
}

// What a graph changes is who issues the kernels, not the training: the same steps with and without
// graphs (every phase captured at its third call and replayed after; two accumulation rounds, the
// reference's precision, no host wait), the same weights, moments, running means and statistics,
// with either dist.rng (global: per-pass generators reseeded each step, deferred running means).
TEST(Trainer, CudaGraphsTrainAsThePhasesWithoutThem) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a GPU (the kit's gpu_tests step runs it)";
  const bool deterministic = at::globalContext().deterministicCuDNN();
  at::globalContext().setDeterministicCuDNN(true);
  TrainConfig c = test::tiny_config();
  c.train.batch_gpu = 4;  // 2 rounds of 4
  c.run.mixed_precision = ReducedType::Float16;
  c.run.channels_last = ChannelsLastBlocks::Reduced;
  c.G.precision.num_fp16_res = c.D.precision.num_fp16_res = 2;
  c.G.conv_clamp = c.D.conv_clamp = 256;
  c.run.host_sync_check = HostSyncCheck::Error;
  constexpr int kSteps = 10;  // Greg at 0, 2, 4 (captured), 6, 8; Dreg at 0, 3, 6 (captured), 9
  const auto train = [&](bool graphs) {
    c.run.cuda_graphs = graphs;
    auto trainer = std::make_unique<Trainer>(c, open_configured_dataset(c), at::Device(at::kCUDA, 0));
    for (int step = 0; step < kSteps; ++step) trainer->step();
    return trainer;
  };
  for (const StepRandomness rng : {StepRandomness::Rank, StepRandomness::Global}) {
    SCOPED_TRACE(std::string("dist.rng ") + name_of(rng));
    c.dist.rng = rng;
    expect_the_same_training(*train(false), *train(true));
  }
  at::globalContext().setDeterministicCuDNN(deterministic);
}

}  // namespace
}  // namespace sg2::train
