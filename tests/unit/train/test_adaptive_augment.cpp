// Adaptive discriminator augmentation in training (sg2/train/adaptive_augment.h): the ADA step of p
// as the reference takes it, from the signs D gives the reals; the config keys and what fine-tuning
// changes; training with augmentation through every phase (R1 differentiates through the pipeline);
// freeze-D.
#include "sg2/train/adaptive_augment.h"
#include "sg2/train/trainer.h"
#include "test_support.h"
#include "tiny_config.h"

#include <ATen/ATen.h>

namespace sg2::train {
namespace {

const at::Device kCpu(at::kCPU);

void expect_error_naming(const std::function<void()>& body, const std::string& text) {
  const std::string message = test::error_message(body);
  EXPECT_NE(message.find(text), std::string::npos) << "expected an error naming '" << text << "', got: " << message;
}

TrainConfig ada_config(double p, int64_t interval, int64_t kimg) {
  TrainConfig c = test::tiny_config();
  c.augment.mode = AugmentMode::Ada;
  c.augment.p = p;
  c.augment.interval = interval;
  c.augment.kimg = config::IntOrAuto(kimg);
  return c;
}

// Logits [N, 1] whose signs are `positive` ones and the rest negative.
at::Tensor logits_with_signs(int64_t positive, int64_t total) {
  return at::where(at::arange(total) < positive, at::full({total}, 2.0), at::full({total}, -3.0)).unsqueeze(1);
}

// p after one adjustment from 0.5, with `positive` of 20 real signs positive (mean (2 positive - 20) / 20).
float p_after_one_adjustment(int64_t positive, int64_t batch, int64_t kimg) {
  TrainConfig c = ada_config(0.5, 4, kimg);
  c.train.batch = batch;
  AdaptiveAugment ada(c, kCpu);
  ada.add_real_signs(logits_with_signs(positive, 20).sign());
  ada.adjust(*dist::local_communicator(kCpu));
  return ada.p.item<float>();
}

TEST(AdaAdjustment, MovesByTheBatchesOfAnIntervalOverTheKimgTowardsTheTarget) {
  EXPECT_EQ(p_after_one_adjustment(17, 64, 500), 0.5f + static_cast<float>(64.0 * 4 / 500000));  // mean 0.7
  EXPECT_EQ(p_after_one_adjustment(15, 64, 500), 0.5f - static_cast<float>(64.0 * 4 / 500000));  // mean 0.5
  EXPECT_EQ(p_after_one_adjustment(16, 64, 500), 0.5f);                                         // mean 0.6
  EXPECT_EQ(p_after_one_adjustment(19, 32, 100), 0.5f + static_cast<float>(32.0 * 4 / 100000));  // mean 0.9
}

TEST(AdaptiveAugment, AdjustsPFromTheRanksSignsInFloat32AndNeverBelowZero) {
  TrainConfig c = ada_config(0.01, 4, 1);  // steps of 8 x 4 / 1000 = 0.032
  AdaptiveAugment ada(c, kCpu);
  auto comm = dist::local_communicator(kCpu);
  ada.add_real_signs(logits_with_signs(3, 4).sign());
  ada.add_real_signs(logits_with_signs(1, 4).sign());  // mean sign (2 - 2) / 8 = 0 < 0.6
  EXPECT_DOUBLE_EQ(ada.real_signs[0].item<double>(), 2 - 2);
  EXPECT_DOUBLE_EQ(ada.real_signs[1].item<double>(), 8);
  ada.adjust(*comm);
  EXPECT_EQ(ada.p.item<float>(), 0.0f);  // 0.01 - 0.032, clamped
  EXPECT_EQ(ada.real_signs.count_nonzero().item<int64_t>(), 0);
  ada.add_real_signs(logits_with_signs(4, 4).sign());
  ada.adjust(*comm);
  ada.add_real_signs(logits_with_signs(4, 4).sign());
  ada.adjust(*comm);
  EXPECT_EQ(ada.p.item<float>(), 0.0f + static_cast<float>(0.032) + static_cast<float>(0.032));
  ada.adjust(*comm);  // an interval without reals leaves p
  EXPECT_EQ(ada.p.item<float>(), static_cast<float>(0.032) + static_cast<float>(0.032));
  EXPECT_FALSE(ada.adjusts_after(3));
  EXPECT_TRUE(ada.adjusts_after(8));
}

TEST(AdaptiveAugment, FixedKeepsPAndNoaugRunsNoPipeline) {
  TrainConfig c = test::tiny_config();
  EXPECT_FALSE(AdaptiveAugment(c, kCpu).enabled());
  c.augment.mode = AugmentMode::Fixed;
  c.augment.p = 0.3;
  AdaptiveAugment fixed(c, kCpu);
  EXPECT_TRUE(fixed.enabled());
  fixed.add_real_signs(logits_with_signs(4, 4).sign());
  EXPECT_EQ(fixed.real_signs.count_nonzero().item<int64_t>(), 0);
  EXPECT_FALSE(fixed.adjusts_after(4));
  EXPECT_EQ(fixed.p.item<float>(), 0.3f);
}

TEST(AugmentConfig, RefusesWhatCannotRunNamingTheKey) {
  TrainConfig c = ada_config(0, 4, 500);
  c.augment.pipe = "bgcx";
  expect_error_naming([&] { validate(c, 1); }, "augment.pipe");
  c = ada_config(1.5, 4, 500);
  expect_error_naming([&] { validate(c, 1); }, "augment.p = 1.5");
  c = test::tiny_config();
  c.augment.p = 0.2;
  expect_error_naming([&] { validate(c, 1); }, "augment.mode noaug");
  c = ada_config(0, 4, 500);
  c.run.cuda_graphs = true;
  expect_error_naming([&] { validate(c, 1); }, "run.cuda_graphs");
  c = ada_config(0, 0, 500);
  expect_error_naming([&] { validate(c, 1); }, "augment.interval");
  c = ada_config(0, 4, 500);
  c.augment.target = 1.5;
  expect_error_naming([&] { validate(c, 1); }, "augment.target");
}

TEST(AugmentConfig, FineTuningReactsFasterWithoutARampUnlessTheKimgIsGiven) {
  TrainConfig c = test::tiny_config();
  c.augment.mode = AugmentMode::Ada;
  EXPECT_EQ(ada_kimg(c), 500);
  std::vector<std::string> notes;
  const TrainConfig tuned = fine_tuning_config(c, &notes);
  EXPECT_EQ(ada_kimg(tuned), 100);
  EXPECT_EQ(tuned.train.ema_rampup, 0);
  EXPECT_EQ(notes.size(), 2u);
  c.augment.kimg = config::IntOrAuto(300);
  notes.clear();
  EXPECT_EQ(ada_kimg(fine_tuning_config(c, &notes)), 300);
}

std::shared_ptr<Trainer> make_trainer(const TrainConfig& c) {
  return std::make_shared<Trainer>(c, open_configured_dataset(c), kCpu);
}

TEST(AdaTraining, EveryPhaseTrainsOnAugmentedImagesAndPFollowsTheSigns) {
  TrainConfig c = ada_config(0.5, 1, 1);  // p moves by 0.008 after every step
  c.augment.pipe = "bgcfnc";               // every op, the geometric ones under R1's second order
  auto trainer = make_trainer(c);
  ASSERT_TRUE(trainer->augment().enabled());
  float p = trainer->augment().p.item<float>();
  for (int step = 0; step < 6; ++step) {  // D_reg_interval 3, G_reg_interval 2: every phase runs
    trainer->step();
    const float moved = trainer->augment().p.item<float>();
    EXPECT_NEAR(std::abs(moved - p), 0.008, 1e-6) << "step " << step;
    p = moved;
  }
  const auto stats = trainer->stats().finish();
  for (const char* name : {"Loss/signs/real", "Loss/r1_penalty", "Loss/pl_penalty", "Loss/G/loss", "Loss/D/loss"}) {
    ASSERT_TRUE(stats.count(name)) << name;
    EXPECT_TRUE(std::isfinite(stats.at(name).mean)) << name;
  }
}

TEST(FreezeD, CountsLayersAsTheReferenceAndTrainsNoneOfThem) {
  TrainConfig c = test::tiny_config();
  c.D.freeze_layers = 5;
  auto trainer = make_trainer(c);
  const std::vector<std::string> expected{"b32.fromrgb", "b32.conv0", "b32.conv1", "b32.skip", "b16.conv0"};
  EXPECT_EQ(frozen_D_layers(trainer->D(), 5), expected);
  expect_error_naming([&] { frozen_D_layers(trainer->D(), 100); }, "D.freeze_layers = 100");
  nn::NamedTensors before = nn::state_dict(trainer->D());
  for (auto& entry : before) entry.second = entry.second.clone();
  for (int step = 0; step < 3; ++step) trainer->step();
  const auto after = nn::state_dict(trainer->D());
  for (size_t i = 0; i < before.size(); ++i) {
    const std::string& name = before[i].first;
    const bool frozen = name.rfind("b32.", 0) == 0 || name.rfind("b16.conv0.", 0) == 0;
    if (name.find("weight") == std::string::npos && name.find("bias") == std::string::npos) continue;
    EXPECT_EQ(before[i].second.equal(after[i].second), frozen) << name;
  }
  for (const auto& [name, tensor] : trainer->trained_parameters(false)) EXPECT_NE(name.rfind("b32.", 0), 0u) << name;
}

}  // namespace
}  // namespace sg2::train
