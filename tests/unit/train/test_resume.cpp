// Snapshots continue a run exactly: the same losses and weights as an uninterrupted run.
#include "sg2/cli/command_line.h"
#include "sg2/core/files.h"
#include "sg2/cli/export.h"
#include "sg2/cli/import.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/trainer.h"
#include "snapshot_compare.h"
#include "test_support.h"
#include "tiny_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace sg2::train {

using namespace sg2::cli;  // the command layer on top: compute settings, generation
namespace {

// Per-step means of every statistic, in a fixed order.
std::vector<double> run_steps(Trainer& trainer, int steps) {
  std::vector<double> values;
  for (int i = 0; i < steps; ++i) {
    trainer.step();
    for (const auto& [name, stat] : trainer.stats().finish()) {
      if (name.rfind("Timing/", 0) != 0) values.push_back(stat.mean);  // timings differ run to run
    }
  }
  return values;
}

std::shared_ptr<Trainer> make_trainer(const TrainConfig& c) {
  return std::make_shared<Trainer>(c, open_configured_dataset(c), at::Device(at::kCPU));
}

// A run of `c` snapshotted after 3 steps continues as it would have without the stop.
void expect_resume_continues_exactly(const TrainConfig& c) {
  test::TempDir dir;
  apply_libtorch_settings(c, dist::World{});
  auto uninterrupted = make_trainer(c);
  run_steps(*uninterrupted, 3);
  save_snapshot(dir.file("snap.pt"), *uninterrupted);
  const std::vector<double> expected = run_steps(*uninterrupted, 5);

  auto resumed = make_trainer(c);
  restore_trainer(*resumed, load_snapshot(dir.file("snap.pt")));
  EXPECT_EQ(resumed->progress().batch_idx, 3);
  EXPECT_EQ(resumed->progress().cur_nimg, 24);
  const std::vector<double> actual = run_steps(*resumed, 5);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_EQ(actual[i], expected[i]) << "statistic " << i;
  const auto a = nn::state_dict(uninterrupted->G_ema()), b = nn::state_dict(resumed->G_ema());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].second.equal(b[i].second)) << a[i].first;
  EXPECT_TRUE(uninterrupted->loss().pl_mean.equal(resumed->loss().pl_mean));
  EXPECT_TRUE(uninterrupted->augment().p.equal(resumed->augment().p));
}

TEST(Resume, SnapshotContinuesWithIdenticalLosses) { expect_resume_continues_exactly(test::tiny_config()); }

// ADA's p and the signs of an interval cut by the snapshot (3 of 4 steps) resume too.
TEST(Resume, AdaptiveAugmentationContinuesMidInterval) {
  TrainConfig c = test::tiny_config();
  c.augment.mode = AugmentMode::Ada;
  c.augment.p = 0.2;
  c.augment.kimg = config::IntOrAuto(1);
  expect_resume_continues_exactly(c);
}

// The snapshot of a tiny run after one step, written to and read back from `dir`.
Snapshot snapshot_after_one_step(const TrainConfig& c, const test::TempDir& dir) {
  auto trainer = make_trainer(c);
  trainer->step();
  save_snapshot(dir.file("snap.pt"), *trainer);
  return load_snapshot(dir.file("snap.pt"));
}

TEST(Resume, SnapshotHoldsEverythingAndRejectsOtherFiles) {
  test::TempDir dir;
  const TrainConfig c = test::tiny_config();
  const Snapshot s = snapshot_after_one_step(c, dir);
  EXPECT_EQ(s.version, kSnapshotVersion);
  EXPECT_EQ(s.integer("progress.cur_nimg"), 8);
  EXPECT_TRUE(s.tensors.count("G_opt.synthesis.b4.conv1.weight.exp_avg_sq"));
  EXPECT_TRUE(s.tensors.count("D_opt.b4.out.bias.step"));
  EXPECT_TRUE(s.tensors.count("G_ema.mapping.w_avg"));
  EXPECT_TRUE(s.tensors.count("rng.step"));
  EXPECT_EQ(train_schema().from_yaml_string(s.config_yaml, "snapshot").G.channel_base, 256);
  EXPECT_EQ(load_generator(s)->options.z_dim, 32);
  if (std::filesystem::exists(test::shared_dir() + "/fixtures/parity_tiny.pt")) {  // a torch.save file, not ours
    EXPECT_THROW(load_snapshot(test::shared_dir() + "/fixtures/parity_tiny.pt"), Error);
  }
  std::ofstream(dir.file("junk.pt")) << "junk";
  EXPECT_THROW(load_snapshot(dir.file("junk.pt")), Error);
}

// Every byte of a snapshot's tensors and counters is covered: one bit flipped in a tensor's data
// (which the torch.save container itself never checks) fails the load, naming the file.
TEST(Resume, SnapshotChecksumCatchesAFlippedBit) {
  test::TempDir dir;
  c10::Dict<c10::IValue, c10::IValue> written(c10::StringType::get(), c10::AnyType::get());
  written.insert("format", std::string(kSnapshotFormat));
  written.insert("version", kSnapshotVersion);
  written.insert("config", std::string("config: 1"));
  written.insert("progress.cur_nimg", int64_t{8});
  written.insert("marker", at::full({64}, 1234.5f));  // bytes 0x449a5000, easy to find in the file
  write_snapshot_dict(dir.file("a.pt"), written);
  std::vector<uint8_t> bytes = read_file_bytes(dir.file("a.pt"));
  const float value = 1234.5f;
  const auto* pattern = reinterpret_cast<const uint8_t*>(&value);
  const auto found = std::search(bytes.begin(), bytes.end(), pattern, pattern + sizeof(float));
  ASSERT_NE(found, bytes.end());
  found[sizeof(float) * 10] ^= 0x01;  // one bit of the eleventh element
  test::write_file_bytes(dir.file("flipped.pt"), bytes);
  const auto dict = read_pickled_dict(dir.file("flipped.pt"));
  EXPECT_NE(dict.at("marker").toTensor()[10].item<float>(), 1234.5f);  // the container read it back changed
  EXPECT_NE(test::error_message([&] { verify_snapshot_checksum(dict, dir.file("flipped.pt")); })
                .find("flipped.pt' is damaged"), std::string::npos);

  // A changed counter or config is caught as well; the sum does not depend on the entries' order.
  auto renamed = read_pickled_dict(dir.file("a.pt"));
  EXPECT_NO_THROW(verify_snapshot_checksum(renamed, "a.pt"));
  renamed.insert_or_assign("config", std::string("config: 2"));
  EXPECT_THROW(verify_snapshot_checksum(renamed, "a.pt"), Error);
  EXPECT_EQ(snapshot_checksum(renamed), snapshot_checksum(renamed.copy()));

  // A version-1 snapshot (no checksum yet) still loads; a version-2 one without it does not.
  auto old = read_pickled_dict(dir.file("a.pt"));
  EXPECT_EQ(old.erase("checksum"), 1u);
  EXPECT_THROW(verify_snapshot_checksum(old, "v2.pt"), Error);
  old.insert_or_assign("version", int64_t{1});
  EXPECT_NO_THROW(verify_snapshot_checksum(old, "v1.pt"));
}

// A snapshot's generator computes as its run trained (the reference's pickles keep their float16
// blocks), in float32 where the device has no such type.
TEST(Resume, GeneratorOfASnapshotRunsInItsRunsPrecision) {
  test::TempDir dir;
  TrainConfig c = test::tiny_config();
  c.run.mixed_precision = ReducedType::BFloat16;
  c.G.precision.num_fp16_res = 1;
  const at::Device cpu(at::kCPU);
  Snapshot s = snapshot_after_one_step(c, dir);
  auto G = load_generator(s, snapshot_precision(s, cpu));
  EXPECT_EQ(G->options.precision.num_fp16_res, 1);
  EXPECT_EQ(G->synthesis->blocks.back()->compute_type, at::kBFloat16);
  EXPECT_EQ(G->synthesis->blocks.front()->compute_type, at::kFloat);
  nn::SynthesisRun run;
  run.noise_mode = nn::NoiseMode::Const;
  EXPECT_EQ(G->forward(at::randn({2, G->options.z_dim}), at::Tensor(), {}, run).scalar_type(), at::kFloat);

  c.run.mixed_precision = ReducedType::Float16;  // a GPU run's snapshot, rendered on the CPU
  s.config_yaml = train_schema().to_yaml_string(c);
  EXPECT_EQ(snapshot_precision(s, cpu).num_fp16_res, 0);
  EXPECT_EQ(inference_precision(c, at::Device(at::kCPU)).num_fp16_res, 0);
  s.config_yaml.clear();  // imported networks: no run config
  EXPECT_EQ(snapshot_precision(s, cpu).num_fp16_res, 0);
  EXPECT_EQ(load_generator(s)->synthesis->blocks.back()->compute_type, at::kFloat);
}

bool any_name_starts_with(const std::vector<std::string>& names, const std::string& prefix) {
  for (const std::string& name : names) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// G registers synthesis before mapping, so reverse registration order puts the mapping (whose
// gradients arrive last) in bucket 0, and no bucket could start before backward ends. After the
// first step the buckets follow the order backward produced the gradients in.
TEST(GradientBuckets, FollowTheOrderBackwardProducesGradientsInOnGsParameters) {
  TrainConfig c = test::tiny_config();
  c.dist.bucket_mb = 0.02;  // about 5,000 floats: several buckets
  auto trainer = make_trainer(c);
  const auto before = trainer->G_reducer().bucket_parameter_names();
  ASSERT_GE(before.size(), 3u);
  EXPECT_TRUE(any_name_starts_with(before.front(), "mapping.")) << "registration order, reversed";
  trainer->step();
  const auto after = trainer->G_reducer().bucket_parameter_names();
  EXPECT_FALSE(any_name_starts_with(after.front(), "mapping.")) << after.front()[0];
  EXPECT_TRUE(any_name_starts_with(after.front(), "synthesis.b32.")) << after.front()[0];  // the output end
  EXPECT_TRUE(any_name_starts_with(after.back(), "mapping.")) << after.back()[0];
  size_t names = 0;
  for (const auto& bucket : after) names += bucket.size();
  EXPECT_EQ(names, nn::named_parameters(trainer->G()).size());
  // Training continues on the rebuilt buckets.
  EXPECT_NO_THROW(trainer->step());
}

// An option the networks do not know (a typo, a nested reference kwarg) changes no tensor shape, so
// only its name can stop an import that would render otherwise.
TEST(Import, UnknownNetworkOptionsAreRefusedByName) {
  test::TempDir dir;
  std::ofstream(dir.file("net.json")) << R"({"G": {"img_resolution": 8, "convclamp": 256},
                                          "D": {"img_resolution": 8, "epilogue_kwargs": {"mbstd_group_size": 2}}})";
  const std::string message = test::error_message(
      [&] { import_reference_networks(dir.file("state.pt"), dir.file("net.json"), dir.file("out.pt")); });
  EXPECT_NE(message.find("net.json': unknown network option(s) G.convclamp, D.epilogue_kwargs"), std::string::npos)
      << message;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.pt")));
}

// The reference's num_fp16_res changes no tensor: the import carries it into the snapshot's config,
// so metrics and renders compute the imported G as the reference's pickle did.
TEST(Import, KeepsTheReferencesFloat16Blocks) {
  test::TempDir dir;
  const std::string fixture = test::source_dir() + "/tests/fixtures/parity/parity_resnet_skip";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(fixture + ".json"));
  j["G"]["num_fp16_res"] = 2;
  j["D"]["num_fp16_res"] = 1;
  std::ofstream(dir.file("net.json")) << j.dump();
  import_reference_networks(fixture + ".pt", dir.file("net.json"), dir.file("out.pt"));
  const TrainConfig c = train_schema().from_yaml_string(load_snapshot(dir.file("out.pt")).config_yaml, "out.pt");
  EXPECT_EQ(c.G.precision.num_fp16_res, 2);
  EXPECT_EQ(c.D.precision.num_fp16_res, 1);
  // And through the TensorFlow form: the export writes the float16 blocks, the import keeps them.
  export_network_pickle(dir.file("out.pt"), dir.file("out.pkl"), false);
  import_tf_network_pickle(dir.file("out.pkl"), dir.file("back.pt"), false);
  const TrainConfig back = train_schema().from_yaml_string(load_snapshot(dir.file("back.pt")).config_yaml, "back.pt");
  EXPECT_EQ(back.G.precision.num_fp16_res, 2);
  j["G"]["num_fp16_res"] = -1;
  std::ofstream(dir.file("bad.json")) << j.dump();
  const std::string message = test::error_message(
      [&] { import_reference_networks(fixture + ".pt", dir.file("bad.json"), dir.file("bad.pt")); });
  EXPECT_NE(message.find("G.num_fp16_res = -1: must be >= 0"), std::string::npos) << message;
}

TEST(Resume, AGeneratorStateOfAnotherDeviceTypeStartsAFreshStream) {
  test::TempDir dir;
  const TrainConfig c = test::tiny_config();
  Snapshot s = snapshot_after_one_step(c, dir);
  EXPECT_EQ(s.integer("rng.device_type"), static_cast<int64_t>(at::kCPU));
  const at::Tensor cpu_state = s.tensors.at("rng.step");

  auto same = make_trainer(c);
  restore_trainer(*same, s);
  EXPECT_TRUE(same->step_rng().get_state().equal(cpu_state));

  // What a CUDA run writes: a 16-byte Philox seed + offset, tagged with the CUDA device type.
  s.integers["rng.device_type"] = static_cast<int64_t>(at::kCUDA);
  s.tensors["rng.step"] = at::zeros({16}, at::kByte);
  auto other = make_trainer(c);
  ASSERT_NO_THROW(restore_trainer(*other, s));
  const at::Tensor fresh_state = other->step_rng().get_state();  // keyed by (seed, rank, step)
  EXPECT_FALSE(fresh_state.equal(cpu_state));
  EXPECT_NO_THROW(other->step());

  // A snapshot from before the device type was recorded: told apart by the state's size.
  s.integers.erase("rng.device_type");
  auto old_format = make_trainer(c);
  ASSERT_NO_THROW(restore_trainer(*old_format, s));
  EXPECT_TRUE(old_format->step_rng().get_state().equal(fresh_state));  // a CUDA state's size: not restored
}

// What tests/tools/snapshot_diff tells the distributed-equivalence tests.
TEST(SnapshotDiff, ANanOrAMissingTensorIsADifference) {
  Snapshot a, b;
  a.path = "a.pt";
  b.path = "b.pt";
  a.tensors["G.w"] = at::tensor({1.0f, 2.0f, 3.0f});
  b.tensors["G.w"] = at::tensor({1.0f, 2.5f, 3.0f});
  a.tensors["D.w"] = b.tensors["D.w"] = at::ones({2});
  test::SnapshotDifference g = test::compare_snapshot_tensors(a, b, "G.");
  EXPECT_DOUBLE_EQ(g.diff, 0.5);
  EXPECT_EQ(g.name, "G.w");
  EXPECT_NEAR(g.rms(), std::sqrt(0.25 / 3), 1e-12);
  EXPECT_EQ(test::compare_snapshot_tensors(a, b, "D.").diff, 0.0);

  b.tensors["G.w"] = at::tensor({1.0f, NAN, 3.0f});  // a diverged run: NaN compares as no difference
  g = test::compare_snapshot_tensors(a, b, "G.");
  EXPECT_FALSE(g.diff <= 1e-3);
  EXPECT_FALSE(g.rms() <= 1e-3);
  a.tensors["G.w"] = b.tensors["G.w"];  // NaN on both sides
  EXPECT_FALSE(test::compare_snapshot_tensors(a, b, "G.").diff <= 1e-3);

  b.tensors["D.extra"] = at::ones({1});
  const std::string only_in_b = "'D.extra' is in b.pt but not in a.pt";
  for (const auto& [first, second] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    const std::string message = test::error_message([&] { test::compare_snapshot_tensors(*first, *second, "D."); });
    EXPECT_NE(message.find(only_in_b), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace sg2::train
