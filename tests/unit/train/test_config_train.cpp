// The training config: presets parse, validation names keys and suggests values that work.
#include "sg2/core/error.h"
#include "sg2/cli/command_line.h"
#include "sg2/cli/local_launch.h"
#include "sg2/cli/presets.h"
#include "sg2/ops/kernels.h"
#include "sg2/ops/tf32_split.h"
#include "sg2/train/batch_probe.h"
#include "sg2/train/config.h"
#include "sg2/train/out_of_memory.h"
#include "sg2/train/trainer.h"
#include "test_support.h"

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <thread>
#include <tuple>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

namespace sg2::train {

using namespace sg2::cli;  // the command layer on top: compute settings, generation
namespace {

std::string validation_error(const TrainConfig& c, int world) {
  return test::error_message([&] { validate(c, world); });
}

TEST(TrainConfig, EveryPresetParsesAndValidates) {
  int presets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(test::source_dir() + "/configs")) {
    if (entry.path().extension() != ".yaml") continue;
    TrainConfig c;
    train_schema().read_yaml_file(c, entry.path().string());
    EXPECT_EQ(validation_error(c, 1), "") << entry.path();
    EXPECT_EQ(c.run.preset, entry.path().stem().string()) << "run.preset should name the file";
    ++presets;
  }
  EXPECT_GE(presets, 8);
}

TEST(TrainConfig, OutOfRangeValuesNameTheirKey) {
  struct Case {
    std::function<void(TrainConfig&)> set;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](TrainConfig& c) { c.loss.r1_gamma = -1; }, "loss.r1_gamma = -1: must be >= 0"},
      {[](TrainConfig& c) { c.loss.pl_weight = std::nan(""); }, "loss.pl_weight = nan"},
      {[](TrainConfig& c) { c.G.w_avg_beta = 2; }, "G.w_avg_beta = 2: must lie in [0, 1]"},
      {[](TrainConfig& c) { c.data.max_images = -1; }, "data.max_images = -1: must be >= 0"},
      {[](TrainConfig& c) { c.run.grid_w = 100000; }, "run.grid_w = 100000"},
      {[](TrainConfig& c) { c.optim.eps = 0; }, "optim.eps = 0: must be > 0"},
      {[](TrainConfig& c) { c.optim.G_lr = std::numeric_limits<double>::infinity(); }, "optim.G_lr = inf"},
      {[](TrainConfig& c) { c.dist.timeout_seconds = 3e6; }, "dist.timeout = 3000000: must be > 0 and at most"},
      {[](TrainConfig& c) { c.run.threads = 100000; }, "run.threads = 100000: must be 0"},
      {[](TrainConfig& c) { c.data.workers = -1; }, "data.workers = -1: must be 0"},
      {[](TrainConfig& c) { c.data.workers = 2000; }, "data.workers = 2000: must be 0"},
  };
  for (const Case& test_case : cases) {
    TrainConfig c;
    test_case.set(c);
    const std::string message = validation_error(c, 1);
    EXPECT_NE(message.find(test_case.expected), std::string::npos) << "got: " << message;
  }
}

TEST(TrainConfig, EachMetricTakesItsOwnDetector) {
  TrainConfig c;
  c.metrics = {"fid50k_full", "pr50k3_full"};
  EXPECT_NE(validation_error(c, 1).find("metric fid50k_full needs metric.detector"), std::string::npos);
  c.metric.pr_detector = "vgg16.pt";
  EXPECT_NE(validation_error(c, 1).find("metric fid50k_full needs metric.detector"), std::string::npos);
  c.metrics = {"pr50k3_full"};  // pr alone: its own detector is enough
  EXPECT_EQ(validation_error(c, 1), "");
  EXPECT_EQ(metric_detector(c, "pr50k3_full"), "vgg16.pt");
  c.metric.detector = "inception.pt";
  EXPECT_EQ(metric_detector(c, "fid50k_full"), "inception.pt");
  EXPECT_EQ(metric_detector(c, "kid1k"), "inception.pt");
  EXPECT_EQ(metric_detector(c, "pr1k3"), "vgg16.pt");
  c.metric.pr_detector.clear();  // none of its own: metric.detector's features
  EXPECT_EQ(metric_detector(c, "pr1k3"), "inception.pt");
  c.metrics = {"pr50k"};
  EXPECT_NE(validation_error(c, 1).find("unknown metric 'pr50k'"), std::string::npos);
}

TEST(TrainConfig, ConfigFMatchesTheDesignTable) {
  TrainConfig c;
  train_schema().read_yaml_file(c, test::source_dir() + "/configs/config-f.yaml");
  EXPECT_EQ(c.G.channel_base, 32768);
  EXPECT_EQ(c.train.batch, 32);
  EXPECT_EQ(c.D.mbstd_group_size, 4);
  EXPECT_DOUBLE_EQ(c.optim.G_lr, 0.002);
  EXPECT_DOUBLE_EQ(c.loss.r1_gamma, 10);
  EXPECT_DOUBLE_EQ(c.train.ema_kimg, 10);
  TrainConfig e;  // NVlabs/stylegan2's run_training.py: config-e halves fmap_base and sets gamma 100
  train_schema().read_yaml_file(e, test::source_dir() + "/configs/config-e.yaml");
  EXPECT_EQ(e.G.channel_base, 16384);
  EXPECT_DOUBLE_EQ(e.loss.r1_gamma, 100);
  TrainConfig cifar;
  train_schema().read_yaml_file(cifar, test::source_dir() + "/configs/cifar.yaml");
  EXPECT_EQ(cifar.G.mapping_layers, 2);
  EXPECT_EQ(cifar.D.architecture, nn::Architecture::Orig);
  EXPECT_EQ(cifar.loss.pl_weight, 0);
  EXPECT_EQ(cifar.loss.style_mixing_prob, 0);
  EXPECT_DOUBLE_EQ(cifar.train.ema_rampup, 0.05);
  // The TensorFlow configuration is float32; stylegan2-ada-pytorch's presets use its mixed precision.
  EXPECT_EQ(c.G.precision.num_fp16_res, 0);
  EXPECT_EQ(cifar.G.precision.num_fp16_res, 4);
  EXPECT_EQ(cifar.D.precision.num_fp16_res, 4);
  EXPECT_DOUBLE_EQ(cifar.D.conv_clamp, 256);
}

TEST(TrainConfig, TheNetworkKeysAreTheNetworksOwn) {
  for (const auto& [prefix, keys] : {std::pair{"G.", nn::generator_schema().keys()},
                                     std::pair{"D.", nn::discriminator_schema().keys()}}) {
    for (const std::string& key : keys) {
      const auto& given = nn::dataset_given_keys();
      const bool from_dataset = std::find(given.begin(), given.end(), key) != given.end();
      EXPECT_EQ(train_schema().find(prefix + key) == nullptr, from_dataset) << prefix << key;
    }
  }
  TrainConfig c;
  train_schema().read_yaml(c, YAML::Load("G: {conv_clamp: 256, architecture: resnet}\nD: {conv_clamp: ~}"), "t");
  EXPECT_DOUBLE_EQ(c.G.conv_clamp, 256);
  EXPECT_EQ(c.G.architecture, nn::Architecture::Resnet);
  EXPECT_DOUBLE_EQ(c.D.conv_clamp, -1);
}

TEST(TrainConfig, BatchGpuTakesAutoAndTheProbeTriesOnlyValidValues) {
  TrainConfig c;
  train_schema().read_yaml(c, YAML::Load("train: {batch_gpu: auto}"), "test");
  EXPECT_TRUE(c.train.batch_gpu.automatic);
  EXPECT_NE(train_schema().to_yaml_string(c).find("batch_gpu: auto"), std::string::npos);
  train_schema().read_yaml(c, YAML::Load("train: {batch_gpu: 8}"), "test");
  EXPECT_FALSE(c.train.batch_gpu.automatic);
  EXPECT_EQ(c.train.batch_gpu.value, 8);
  const std::string bad =
      test::error_message([&] { train_schema().read_yaml(c, YAML::Load("train: {batch_gpu: many}"), "test"); });
  EXPECT_NE(bad.find("an integer or auto"), std::string::npos) << bad;
  // 32 over 2 processes: divisors of 16; mbstd groups of 4 hold 2 but 1 leaves no image for path length.
  c.train.batch = 32;
  c.D.mbstd_group_size = 4;
  c.loss.pl_batch_shrink = 2;
  EXPECT_EQ(batch_gpu_candidates(c, 2), (std::vector<int64_t>{16, 8, 4, 2}));
  c.D.mbstd_group_size = 8;  // a group larger than the per-round batch shrinks to it, as in the reference
  EXPECT_EQ(batch_gpu_candidates(c, 2), (std::vector<int64_t>{16, 8, 4, 2}));
  c.train.batch_gpu = {0, true};
  EXPECT_EQ(mbstd_group_warning(c, 2), "");  // 16 images per process and round
  const std::string shrunk = mbstd_group_warning(c, 8);
  EXPECT_NE(shrunk.find("D.mbstd_group_size = 8 but a round holds 4 images per process (train.batch 32 over 8 "
                        "processes): minibatch-std groups of 4"), std::string::npos) << shrunk;
  EXPECT_NE(shrunk.find("train.batch_gpu 8 or more (so train.batch 64 or more)"), std::string::npos) << shrunk;
  EXPECT_NE(mbstd_group_warning(c, 32).find("groups of 1: the feature is a constant"), std::string::npos);
  c.train.batch_gpu = {2, false};  // accumulation: rounds of 2 of the 16 per process
  EXPECT_NE(mbstd_group_warning(c, 2).find("a round holds 2 images"), std::string::npos);
  c.D.mbstd_group_size = 3;  // only per-round batches that 3 divides, or that are smaller than 3
  EXPECT_EQ(batch_gpu_candidates(c, 2), (std::vector<int64_t>{2}));
}

// The probe's bound leaves memory that LibTorch's allocator does not hold out of the share: another
// process holding half of an 80 GiB GPU leaves 28 GiB, not 68. The CPU has no bound.
TEST(TrainConfig, TheProbesBudgetLeavesOutMemoryOutsideTheAllocator) {
  EXPECT_DOUBLE_EQ(batch_probe_budget_gib(80.0, 0.0), 80.0 * kBatchProbeMemoryShare);
  EXPECT_DOUBLE_EQ(batch_probe_budget_gib(80.0, 40.0), 80.0 * kBatchProbeMemoryShare - 40.0);
  EXPECT_LE(batch_probe_budget_gib(80.0, 70.0), 0.0);
  EXPECT_EQ(batch_probe_budget_gib(0.0, 0.0), 0.0);
}

// With run.cuda_graphs a captured phase's pool keeps its working memory while a phase not yet
// captured runs beside it, so a candidate must fit its working memory twice; without, its peak once.
TEST(TrainConfig, WithCudaGraphsAProbedStepMustFitItsWorkingMemoryTwice) {
  EXPECT_DOUBLE_EQ(probed_step_need_gib(41.0, 11.0, /*cuda_graphs=*/false), 41.0);
  EXPECT_DOUBLE_EQ(probed_step_need_gib(41.0, 11.0, /*cuda_graphs=*/true), 71.0);  // 41 + (41 - 11)
  EXPECT_DOUBLE_EQ(probed_step_need_gib(0.0, 0.0, /*cuda_graphs=*/true), 0.0);     // the CPU: nothing bounds it
  EXPECT_DOUBLE_EQ(probed_step_need_gib(5.0, 6.0, /*cuda_graphs=*/true), 5.0);     // freed more than it took
  // A candidate that fits the budget alone but not with the graphs' pool beside it.
  const double budget = batch_probe_budget_gib(79.6, 0.6);
  EXPECT_LE(probed_step_need_gib(41.0, 11.0, false), budget);
  EXPECT_GT(probed_step_need_gib(41.0, 11.0, true), budget);
}

TEST(TrainConfig, FusedModconvAutoFusesInInferenceOnly) {
  TrainConfig config;
  const std::vector<std::tuple<std::string, bool, bool>> cases = {
      {"auto", false, true}, {"true", true, true}, {"false", false, false}};
  for (const auto& [value, training, inference] : cases) {
    train_schema().set(config, "G.fused_modconv", YAML::Node(value), "test");  // by name, as a config file
    EXPECT_EQ(fused_modconv_in_training(config), training) << value;
    EXPECT_EQ(fused_modconv_in_inference(config), inference) << value;
  }
}

TEST(TrainConfig, MixedPrecisionTypeFollowsTheModeAndDevice) {
  const at::Device cpu(at::kCPU), cuda(at::kCUDA, 0);
  EXPECT_EQ(mixed_precision_type(ReducedType::Auto, cpu), at::kFloat);
  EXPECT_EQ(mixed_precision_type(ReducedType::Auto, cuda), at::kHalf);
  EXPECT_EQ(mixed_precision_type(ReducedType::Off, cuda), at::kFloat);
  EXPECT_EQ(mixed_precision_type(ReducedType::BFloat16, cpu), at::kBFloat16);
  EXPECT_EQ(mixed_precision_type(ReducedType::Float16, cuda), at::kHalf);
  EXPECT_NE(test::error_message([&] { mixed_precision_type(ReducedType::Float16, cpu); }).find("use bfloat16 or off"),
            std::string::npos);
}

// run.channels_last reaches the precision of training and of inference (in float32 too, where the
// device lacks the reduced type), and the networks' blocks read it per type.
TEST(TrainConfig, ChannelsLastReachesTrainingAndInference) {
  const at::Device cpu(at::kCPU);
  TrainConfig c;
  EXPECT_EQ(c.run.channels_last, ChannelsLastBlocks::Auto);
  EXPECT_EQ(inference_precision(c, cpu).channels_last, nn::ChannelsLast::Off);  // auto: the reference's layout
  EXPECT_EQ(inference_precision(c, at::Device(at::kCUDA, 0)).channels_last, nn::ChannelsLast::Reduced);  // measured
  train_schema().set(c, "run.channels_last", YAML::Node("reduced"), "--run.channels_last");
  c.run.mixed_precision = ReducedType::BFloat16;
  c.G.precision.num_fp16_res = 2;
  const nn::MixedPrecision p = inference_precision(c, cpu);
  EXPECT_EQ(p.channels_last, nn::ChannelsLast::Reduced);
  EXPECT_EQ(p.block_memory_format(p.block_type(256, 256)), at::MemoryFormat::ChannelsLast);
  EXPECT_EQ(p.block_memory_format(p.block_type(64, 256)), at::MemoryFormat::Contiguous);
  c.run.mixed_precision = ReducedType::Float16;  // a GPU run's config on the CPU: float32, in the layout asked for
  c.run.channels_last = ChannelsLastBlocks::All;
  EXPECT_EQ(inference_precision(c, cpu).block_memory_format(at::kFloat), at::MemoryFormat::ChannelsLast);
  const std::string message = test::error_message(
      [&] { train_schema().set(c, "run.channels_last", YAML::Node("nhwc"), "--run.channels_last"); });
  EXPECT_NE(message.find("auto, off, reduced, all"), std::string::npos) << message;
}

// The config's choices are enums, read and written by their names; another name is refused naming
// the key and every allowed name.
TEST(TrainConfig, ChoicesAreReadOnceAndWrittenByName) {
  TrainConfig c;
  train_schema().set(c, "dist.backend", YAML::Node("gloo"), "test");
  train_schema().set(c, "dist.rng", YAML::Node("global"), "test");
  train_schema().set(c, "run.device", YAML::Node("cpu"), "test");
  EXPECT_EQ(c.dist.backend, dist::Backend::Gloo);
  EXPECT_EQ(c.dist.rng, StepRandomness::Global);
  EXPECT_EQ(c.run.device, DeviceChoice::Cpu);
  const TrainConfig back = train_schema().from_yaml_string(train_schema().to_yaml_string(c), "written");
  EXPECT_EQ(back.dist.backend, dist::Backend::Gloo);
  EXPECT_EQ(back.dist.rng, StepRandomness::Global);
  EXPECT_NE(train_schema().to_yaml_string(c).find("backend: gloo"), std::string::npos);
  const std::string message =
      test::error_message([&] { train_schema().set(c, "dist.backend", YAML::Node("ucc"), "--dist.backend"); });
  EXPECT_NE(message.find("key 'dist.backend' (--dist.backend): 'ucc' is not one of: auto, nccl, mpi, gloo, local"),
            std::string::npos)
      << message;
  EXPECT_EQ(train_schema().find("run.device")->choices, (std::vector<std::string>{"auto", "cpu", "cuda"}));
}

TEST(TrainConfig, BatchWorldAndGroupsAreCheckedTogether) {
  TrainConfig c;
  c.train.batch = 32;
  EXPECT_EQ(validation_error(c, 3).find("train.batch = 32 is not divisible by the world size 3") != std::string::npos,
            true);
  c.train.batch_gpu = 5;
  const std::string m = validation_error(c, 2);
  EXPECT_NE(m.find("train.batch_gpu = 5"), std::string::npos) << m;
  EXPECT_NE(m.find("1, 2, 4, 8, 16"), std::string::npos) << m;
  c.train.batch_gpu = 4;
  c.D.mbstd_group_size = 3;  // groups of min(3, 4) = 3 cannot tile a round of 4
  const std::string g = validation_error(c, 2);
  EXPECT_NE(g.find("D.mbstd_group_size = 3 does not divide the per-round batch 4"), std::string::npos) << g;
  EXPECT_NE(g.find("values that work: 1, 2, 4"), std::string::npos) << g;
  c.D.mbstd_group_size = 8;  // as the reference: min(8, 4) = 4 images per group
  EXPECT_EQ(validation_error(c, 2), "");
  EXPECT_EQ(rounds_per_step(c, 2), 4);
  c.data.resolution = 48;
  EXPECT_NE(validation_error(c, 2).find("data.resolution = 48"), std::string::npos);
}

TEST(TrainConfig, BatchesNoDeviceHoldsAreRefusedNamingTheKey) {
  TrainConfig c;
  c.train.batch = 100000000;
  const std::string m = validation_error(c, 1);
  EXPECT_NE(m.find("train.batch_gpu: 100000000 images per process and round (train.batch 100000000 / world size 1)"),
            std::string::npos) << m;
  c.train.batch_gpu = 4;  // accumulated over rounds: accepted
  EXPECT_EQ(validation_error(c, 1), "");
}

TEST(TrainConfig, AnAllocationFailureNamesTheBatch) {
  TrainConfig c;
  c.train.batch = 64;
  c.train.batch_gpu = 16;
  // A real allocator failure: 2^50 bytes is more than any machine maps.
  const std::string m = test::error_message([&] {
    naming_the_batch_on_out_of_memory(c, 2, [] { return int(at::empty({int64_t(1) << 50}, at::kByte).numel()); });
  });
  EXPECT_NE(m.find("out of memory with train.batch_gpu = 16 images per process and round (train.batch 64 over 2 "
                   "processes, 2 rounds per step)"), std::string::npos) << m;
  // Other errors pass unchanged.
  const std::string other = test::error_message([&] {
    naming_the_batch_on_out_of_memory(c, 2, []() -> int { SG2_FAIL("data.path 'x' does not exist"); });
  });
  EXPECT_EQ(other.find("data.path 'x' does not exist"), 0u) << other;
}

// cuBLAS and cuDNN report their own workspace failures without "out of memory" (LibTorch's words):
// the batch probe must still take them for a batch that does not fit.
TEST(TrainConfig, LibraryAllocationFailuresCountAsOutOfMemory) {
  EXPECT_TRUE(is_out_of_memory(std::runtime_error("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate")));
  EXPECT_TRUE(is_out_of_memory(std::runtime_error("cuDNN error: CUDNN_STATUS_ALLOC_FAILED")));
  EXPECT_TRUE(is_out_of_memory(std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB")));
  // Set-up failures that a full GPU causes among other things: a smaller batch for the probe only.
  for (const char* message : {"CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate",
                              "FIND was unable to find an engine to execute this computation"}) {
    EXPECT_FALSE(is_out_of_memory(std::runtime_error(message))) << message;
    EXPECT_TRUE(may_be_out_of_memory(std::runtime_error(message))) << message;
  }
  EXPECT_TRUE(may_be_out_of_memory(std::runtime_error("CUDA out of memory. Tried to allocate 2.00 GiB")));
  EXPECT_FALSE(may_be_out_of_memory(std::runtime_error("cuDNN error: CUDNN_STATUS_BAD_PARAM")));
  EXPECT_FALSE(is_out_of_memory(std::runtime_error("cuDNN error: CUDNN_STATUS_BAD_PARAM")));
}

// The probe's reading of a candidate's failed step (probe_failure, from the step's error handler).
std::string probe_failure_of(const std::runtime_error& thrown, int64_t batch_gpu, bool smallest) {
  try {
    throw thrown;
  } catch (const std::exception& e) {
    return probe_failure(e, batch_gpu, smallest);
  }
}

TEST(BatchProbe, FailuresReadAsMemoryWhereTheyMayBeAndTheLastOneThatMayNotIsShownWhole) {
  const std::runtime_error oom("CUDA out of memory. Tried to allocate 2.00 GiB\nbacktrace");
  EXPECT_EQ(probe_failure_of(oom, 8, false), "out of memory (CUDA out of memory. Tried to allocate 2.00 GiB)");
  EXPECT_EQ(probe_failure_of(oom, 1, true), "out of memory (CUDA out of memory. Tried to allocate 2.00 GiB)");
  const std::runtime_error handle("CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle)");
  EXPECT_EQ(probe_failure_of(handle, 8, false), "failed, perhaps out of memory (CUDA error: "
                                                "CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle))");
  const std::string last = sg2::test::error_message([&] { probe_failure_of(handle, 2, true); });
  EXPECT_NE(last.find("even 2 image(s) per round failed"), std::string::npos) << last;
  EXPECT_NE(last.find("CUBLAS_STATUS_NOT_INITIALIZED when calling cublasCreate(handle)"), std::string::npos) << last;
  // Anything else is no probe's business: it goes on up as it was.
  EXPECT_THROW(probe_failure_of(std::runtime_error("cuDNN error: CUDNN_STATUS_BAD_PARAM"), 8, false),
               std::exception);
}

// 3xTF32 on a GPU without TF32 (before compute capability 8.0) runs three float32 passes: a warning
// that names the capability; none with TF32, without the split, or without a GPU.
TEST(ComputeSettings, TheSplitWarnsOnAGpuWithoutTf32) {
  using ops::DeviceSet;
  const std::string volta = ops::tf32_split_warning(DeviceSet::Cuda, 70);
  EXPECT_NE(volta.find("compute capability 7.0, which has no TF32"), std::string::npos) << volta;
  EXPECT_NE(ops::tf32_split_warning(DeviceSet::Cuda, 75), "");
  EXPECT_EQ(ops::tf32_split_warning(DeviceSet::Cuda, 80), "");  // A100
  EXPECT_EQ(ops::tf32_split_warning(DeviceSet::Cuda, 90), "");  // H100
  EXPECT_EQ(ops::tf32_split_warning(DeviceSet::None, 70), "");
  EXPECT_EQ(ops::tf32_split_warning(DeviceSet::Cuda, 0), "");  // no GPU
}

TEST(ComputeSettings, ThreadsPerLocalRankAndAnExplicitPrecisionPolicy) {
  TrainConfig c;
  dist::World world;
  world.local_size = 2;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const std::string line = apply_libtorch_settings(c, world);
  EXPECT_EQ(at::get_num_threads(), std::max(1, cores / 2)) << line;
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());  // off by default, as the reference
  EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_TRUE(at::globalContext().benchmarkCuDNN());
  EXPECT_NE(line.find("TF32 off, cuDNN benchmark on"), std::string::npos) << line;
  EXPECT_EQ(line.find("conv2d_gradfix"), std::string::npos) << line;  // on, as the reference: not worth a word
  c.run.threads = 1;
  c.run.allow_tf32 = true;
  c.run.cudnn_benchmark = false;
  c.run.conv2d_gradfix = false;
  c.run.float32_convolutions = Float32Convolutions::ThreeTf32;
  EXPECT_NE(apply_libtorch_settings(c, world).find("TF32 on, float32 convolutions in 3xTF32, cuDNN benchmark off, "
                                                   "conv2d_gradfix off"),
            std::string::npos);
  EXPECT_EQ(compute_settings_warning(c, at::Device(at::kCPU)), "");
  const std::string split_message = test::error_message(
      [&] { train_schema().set(c, "run.float32_convolutions", YAML::Node("tf32"), "--run.float32_convolutions"); });
  EXPECT_NE(split_message.find("ieee, 3xtf32"), std::string::npos) << split_message;
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_TRUE(at::globalContext().allowTF32CuDNN());
  EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(at::globalContext().benchmarkCuDNN());
  const TrainConfig defaults;
  apply_libtorch_settings(defaults, dist::World{});  // back to the defaults for later tests
}

// The run's compute settings come from its config alone: the kernels, and gradfix and the TF32
// split on CUDA as run.conv2d_gradfix and run.float32_convolutions say.
TEST(ComputeSettings, TheRunsSettingsFollowItsConfig) {
  TrainConfig c;
  ops::ComputeSettings compute = compute_settings_of(c);
  EXPECT_EQ(compute.kernel, ops::Kernel::Auto);
  EXPECT_EQ(compute.conv2d_gradfix, ops::DeviceSet::Cuda);
  EXPECT_EQ(compute.tf32_split, ops::DeviceSet::None);
  EXPECT_FALSE(compute.pre_activation);
  c.run.conv2d_gradfix = false;
  c.run.float32_convolutions = Float32Convolutions::ThreeTf32;
  compute = compute_settings_of(c);
  EXPECT_EQ(compute.conv2d_gradfix, ops::DeviceSet::None);
  EXPECT_EQ(compute.tf32_split, ops::DeviceSet::Cuda);
}

// run.fir_kernel is retired: a config or a snapshot's config that gives it still loads (a warning
// says it is ignored); the command line, whose flag is gone, says so and fails.
TEST(ConfigSchema, ARetiredKeyIsIgnoredInFilesAndRefusedOnTheCommandLine) {
  const TrainConfig c = train_schema().from_yaml_string("run:\n  fir_kernel: unstaged\ntrain:\n  batch: 8\n",
                                                        "snapshot config");
  EXPECT_EQ(c.train.batch, 8);
  ASSERT_NE(train_schema().retired_note("run.fir_kernel"), nullptr);
  EXPECT_EQ(train_schema().find("run.fir_kernel"), nullptr);
  const std::string message =
      test::error_message([] { config::reject_extras(train_schema(), {"--run.fir_kernel", "unstaged"}); });
  EXPECT_NE(message.find("--run.fir_kernel is retired"), std::string::npos) << message;
}

}  // namespace
}  // namespace sg2::train

namespace sg2::cli {
namespace {

TEST(PresetNames, ANameFindsTheShippedPresetAndAPathStillWorks) {
  EXPECT_EQ(std::filesystem::path(preset_or_file("paper256")).filename(), "paper256.yaml");
  EXPECT_EQ(std::filesystem::path(preset_or_file("fashion32.yaml")).filename(), "fashion32.yaml");
  const std::string path = test::source_dir() + "/configs/cifar.yaml";
  EXPECT_EQ(preset_or_file(path), path);
  const std::vector<std::string> names = preset_names();
  for (const char* name : {"config-f", "config-e", "paper256", "paper512", "paper1024", "cifar", "fashion32"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(PresetNames, AnUnknownNameOrMissingFileListsThePresets) {
  const std::string message = test::error_message([] { preset_or_file("paper257"); });
  EXPECT_NE(message.find("--config 'paper257': no such file, and no preset of that name; the presets are "),
            std::string::npos) << message;
  EXPECT_NE(message.find("paper256, paper512"), std::string::npos) << message;
  EXPECT_NE(test::error_message([] { preset_or_file("nowhere/x.yaml"); }).find("no such file;"), std::string::npos);
}

TEST(PresetNames, CfgOnTheCommandLineReadsThePreset) {
  CLI::App app;
  ConfigOptions options;
  options.add_to(app);
  std::vector<std::string> args{"--kimg", "3", "--cfg", "fashion32"};  // CLI11 parses a reversed vector
  std::reverse(args.begin(), args.end());
  app.parse(args);
  const TrainConfig config = options.resolve();
  EXPECT_EQ(config.run.preset, "fashion32");
  EXPECT_EQ(config.train.total_kimg, 3);
  EXPECT_EQ(std::filesystem::path(options.config_file()).filename(), "fashion32.yaml");
}

TEST(LocalLaunch, TheRanksGetTheArgumentsLessGpus) {
  const std::vector<std::string> given{"stylegan2_train", "--gpus", "4", "--cfg", "paper256", "--gpus=2", "--kimg", "1"};
  const std::vector<std::string> expected{"stylegan2_train", "--cfg", "paper256", "--kimg", "1"};
  EXPECT_EQ(arguments_without_gpus(given), expected);
}

TEST(LocalLaunch, MoreRanksThanGpusOrCudaWithoutOneIsRefused) {
  check_gpu_count(8, train::DeviceChoice::Auto, 8);
  check_gpu_count(4, train::DeviceChoice::Auto, 0);  // no GPU: CPU ranks
  check_gpu_count(4, train::DeviceChoice::Cpu, 2);
  EXPECT_NE(test::error_message([] { check_gpu_count(4, train::DeviceChoice::Auto, 2); })
                .find("--gpus 4: this node has 2 GPUs visible"), std::string::npos);
  EXPECT_NE(test::error_message([] { check_gpu_count(2, train::DeviceChoice::Cuda, 0); })
                .find("--gpus 2 with run.device cuda, but LibTorch sees no CUDA device"), std::string::npos);
  EXPECT_GT(free_local_port(), 0);
}

}  // namespace
}  // namespace sg2::cli
