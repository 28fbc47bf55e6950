// The tick loop writes a complete run directory; run directories and --resume resolution; generation.
#include "sg2/core/rng.h"
#include "sg2/data/image_io.h"
#include "sg2/cli/command_line.h"
#include "sg2/cli/generate.h"
#include "sg2/train/run_dir.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/training_loop.h"
#include "test_support.h"
#include "tiny_config.h"

#include <torch/cuda.h>

#include <filesystem>
#include <fstream>

namespace sg2::train {

using namespace sg2::cli;  // the command layer on top: compute settings, generation
namespace {

namespace fs = std::filesystem;

int count_lines(const std::string& path) {
  std::ifstream in(path);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

TEST(TrainingLoop, WritesGridsStatsAndSnapshots) {
  test::TempDir dir;
  TrainConfig c = test::tiny_config();
  c.train.total_kimg = 0.048;  // 6 steps of 8
  c.train.kimg_per_tick = 0.016;
  c.run.image_snapshot_ticks = 2;
  c.run.network_snapshot_ticks = 2;
  Trainer trainer(c, open_configured_dataset(c), at::Device(at::kCPU));
  const std::string run_dir = create_run_dir(dir.path(), "tiny");
  EXPECT_EQ(fs::path(run_dir).filename(), "00000-tiny");
  EXPECT_TRUE(TrainingLoop(trainer, run_dir, false).run());

  // Ticks end after steps 1, 3, 5 and 6 (tick 0 ends after the first step, as in the reference).
  EXPECT_EQ(count_lines(run_dir + "/stats.jsonl"), 4);
  const data::Image reals = data::read_png(run_dir + "/reals.png");
  EXPECT_EQ(reals.width, 4 * 32);
  EXPECT_EQ(reals.height, 2 * 32);
  EXPECT_EQ(reals.channels, 1);
  EXPECT_TRUE(fs::exists(run_dir + "/fakes_init.png"));
  // Ticks shorter than a kimg: the first's files have the reference's names, the later ones' their images.
  EXPECT_TRUE(fs::exists(run_dir + "/fakes000000.png"));
  EXPECT_TRUE(fs::exists(run_dir + "/fakes000000.040.png"));
  EXPECT_TRUE(fs::exists(run_dir + "/network-snapshot-000000.pt"));
  EXPECT_TRUE(fs::exists(run_dir + "/network-snapshot-000000.040.pt"));
  EXPECT_EQ(latest_snapshot_in(run_dir), run_dir + "/network-snapshot-000000.048.pt");
  EXPECT_EQ(load_snapshot(latest_snapshot_in(run_dir)).integer("progress.cur_tick"), 4);
  EXPECT_EQ(resolve_resume("latest", dir.path()), latest_snapshot_in(run_dir));
  EXPECT_EQ(resolve_resume(run_dir, dir.path()), latest_snapshot_in(run_dir));
  EXPECT_EQ(fs::path(create_run_dir(dir.path(), "next")).filename(), "00001-next");
  EXPECT_THROW(resolve_resume(dir.file("nothing"), dir.path()), Error);
  // A snapshot named from inside its run directory resolves to its absolute path, whose directory
  // is the run directory (not "", which would put the run's files at /).
  const fs::path caller_dir = fs::current_path();
  fs::current_path(run_dir);
  const std::string bare = resolve_resume("network-snapshot-000000.048.pt", dir.path());
  fs::current_path(caller_dir);
  EXPECT_EQ(bare, latest_snapshot_in(run_dir));
  EXPECT_EQ(fs::path(bare).parent_path(), fs::path(run_dir));

  // A resumed run forgets the ticks past its snapshot, and a line a crash cut short.
  std::ofstream(run_dir + "/stats.jsonl", std::ios::app) << R"({"Loss/G/loss": {"mean")";
  EXPECT_EQ(trim_stats_after(run_dir + "/stats.jsonl", 24), 3);  // ticks at 40 and 48 images, the cut line
  EXPECT_EQ(count_lines(run_dir + "/stats.jsonl"), 2);
  EXPECT_EQ(trim_stats_after(run_dir + "/stats.jsonl", 24), 0);

  GenerateOptions g;
  g.network = latest_snapshot_in(run_dir);
  g.seeds = {0, 1, 2};
  g.outdir = dir.file("gen");
  g.truncation_psi = 0.7;
  const auto written = generate_images(g);
  ASSERT_EQ(written.size(), 4u);
  EXPECT_EQ(data::read_png(written[0]).width, 32);
  EXPECT_EQ(data::read_png(written.back()).width, 2 * 32);  // 3 images in a 2x2 grid
}

TEST(TrainingLoop, KimgCountsImagesRoundedUpNotTruncated) {
  EXPECT_EQ(images_of_kimg(1.001), 1001);  // 1000.9999999999999 as a double product
  EXPECT_EQ(images_of_kimg(1.009), 1009);  // 1008.9999999999999
  EXPECT_EQ(images_of_kimg(2.007), 2007);  // 2007.0000000000002
  EXPECT_EQ(images_of_kimg(0.0015), 2);
  EXPECT_EQ(images_of_kimg(25000), 25000000);
}

TEST(RunDir, FilesOfTicksShorterThanAKimgKeepTheirOwnNames) {
  EXPECT_EQ(snapshot_name(8), "network-snapshot-000000.pt");  // a run's first tick
  EXPECT_EQ(snapshot_name(48, 24), "network-snapshot-000000.048.pt");  // a later tick in the same kimg
  EXPECT_EQ(snapshot_name(1016, 992), "network-snapshot-000001.pt");  // the first to end in its kimg
  EXPECT_EQ(snapshot_name(123456, 123000), "network-snapshot-000123.456.pt");
  EXPECT_EQ(snapshot_name(123000, 122000), "network-snapshot-000123.pt");  // the reference's, tick after tick
  test::TempDir dir;
  for (const char* name : {"network-snapshot-000000.pt", "network-snapshot-000000.512.pt", "network-snapshot-000000.048.pt",
                           "network-snapshot-000000.pt.tmp12", "network-snapshot-0.5.pt"}) {
    std::ofstream(dir.file(name)) << "x";
  }
  EXPECT_EQ(latest_snapshot_in(dir.path()), dir.file("network-snapshot-000000.512.pt"));  // by images, not by name
  std::ofstream(dir.file("network-snapshot-000001.pt")) << "x";
  EXPECT_EQ(latest_snapshot_in(dir.path()), dir.file("network-snapshot-000001.pt"));
}

TEST(TrainingLoop, StopVotesComeAboutEveryTwoSecondsInWholeSteps) {
  EXPECT_EQ(steps_to_next_stop_vote(45.0), 1);    // config-f on a CPU: every step
  EXPECT_EQ(steps_to_next_stop_vote(2.0), 1);
  EXPECT_EQ(steps_to_next_stop_vote(0.5), 4);
  EXPECT_EQ(steps_to_next_stop_vote(0.001), kStopVoteSteps);  // not more than kStopVoteSteps apart
  EXPECT_EQ(steps_to_next_stop_vote(0.0), 1);     // no step timed yet
}

TEST(Generate, LatentsAreNumpyCompatible) {
  const at::Tensor z = latents_for_seeds({0, 42}, 3);
  EXPECT_NEAR(z[0][0].item<double>(), 1.764052345967664, 1e-6);
  EXPECT_NEAR(z[1][1].item<double>(), -0.13826430117118466, 1e-6);
  EXPECT_THROW(latents_for_seeds({-1}, 3), Error);
}

// run.host_sync_check error: every phase of a cycle (Gmain, Greg, Dmain, Dreg), the inputs and
// the EMA without one LibTorch op that waits for the device. On a GPU (the kit runs it there) in
// float16 channels_last blocks; on the CPU the check has nothing to see, and the step runs as ever.
TEST(Trainer, NoStepMakesTheHostWaitForTheGpu) {
  const bool gpu = torch::cuda::is_available();
  TrainConfig c = test::tiny_config();
  c.run.host_sync_check = HostSyncCheck::Error;
  c.run.mixed_precision = gpu ? ReducedType::Float16 : ReducedType::BFloat16;
  c.run.channels_last = ChannelsLastBlocks::Reduced;
  c.G.precision.num_fp16_res = c.D.precision.num_fp16_res = 2;
  c.G.conv_clamp = c.D.conv_clamp = 256;
  c.data.workers = 2;
  Trainer trainer(c, open_configured_dataset(c), gpu ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU));
  for (int step = 0; step < 6; ++step) trainer.step();  // 6: the intervals 2 and 3 both come round
  EXPECT_EQ(trainer.progress().batch_idx, 6);
  EXPECT_TRUE(trainer.G().synthesis->parameters()[0].isfinite().all().item<bool>());
}

}  // namespace
}  // namespace sg2::train
