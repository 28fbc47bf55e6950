#pragma once
// The training configuration: every field defined once in train_schema() (key, type, default,
// help), read from YAML presets (configs/*.yaml) and --key value flags, written back as the
// resolved config of a run. Defaults are config-f (docs/architecture.md, "Hyper-parameters"). The config holds the
// option structs of the layers it configures (data, networks, loss, Adam's moments, the
// communicator) directly; the G.* and D.* keys come from the networks' own schemas (nn/options.h),
// so they are defined once.

#include "sg2/core/config_schema.h"
#include "sg2/data/options.h"
#include "sg2/device/cuda_device.h"
#include "sg2/distributed/session.h"
#include "sg2/ops/compute_settings.h"
#include "sg2/nn/options.h"
#include "sg2/train/optim.h"
#include "sg2/train/loss_options.h"

#include <string>
#include <vector>

namespace sg2::train {

// The config's choices, read once from their names (the fields are written and read by name; a
// name outside a table is an error naming the key and the allowed names).
enum class DeviceChoice { Auto, Cpu, Cuda };  // run.device; auto: CUDA where LibTorch sees a GPU
inline constexpr EnumNames<DeviceChoice, 3> kDeviceChoiceNames{
    {{DeviceChoice::Auto, "auto"}, {DeviceChoice::Cpu, "cpu"}, {DeviceChoice::Cuda, "cuda"}}};
constexpr const auto& enum_names(DeviceChoice) { return kDeviceChoiceNames; }

enum class Float32Convolutions { Ieee, ThreeTf32 };  // run.float32_convolutions (nn/tf32_split.h)
inline constexpr EnumNames<Float32Convolutions, 2> kFloat32ConvolutionNames{
    {{Float32Convolutions::Ieee, "ieee"}, {Float32Convolutions::ThreeTf32, "3xtf32"}}};
constexpr const auto& enum_names(Float32Convolutions) { return kFloat32ConvolutionNames; }

enum class ReducedType { Auto, Float16, BFloat16, Off };  // run.mixed_precision: the reduced blocks' type
inline constexpr EnumNames<ReducedType, 4> kReducedTypeNames{{{ReducedType::Auto, "auto"},
                                                                {ReducedType::Float16, "float16"},
                                                                {ReducedType::BFloat16, "bfloat16"},
                                                                {ReducedType::Off, "off"}}};
constexpr const auto& enum_names(ReducedType) { return kReducedTypeNames; }

enum class ChannelsLastBlocks { Auto, Off, Reduced, All };  // run.channels_last (nn::ChannelsLast, or auto)
inline constexpr EnumNames<ChannelsLastBlocks, 4> kChannelsLastBlockNames{{{ChannelsLastBlocks::Auto, "auto"},
                                                                            {ChannelsLastBlocks::Off, "off"},
                                                                            {ChannelsLastBlocks::Reduced, "reduced"},
                                                                            {ChannelsLastBlocks::All, "all"}}};
constexpr const auto& enum_names(ChannelsLastBlocks) { return kChannelsLastBlockNames; }

enum class FusedModconv { Auto, Always, Never };  // G.fused_modconv: auto, true, false
inline constexpr EnumNames<FusedModconv, 3> kFusedModconvNames{
    {{FusedModconv::Auto, "auto"}, {FusedModconv::Always, "true"}, {FusedModconv::Never, "false"}}};
constexpr const auto& enum_names(FusedModconv) { return kFusedModconvNames; }

enum class StepRandomness { Rank, Global };  // dist.rng
inline constexpr EnumNames<StepRandomness, 2> kStepRandomnessNames{
    {{StepRandomness::Rank, "rank"}, {StepRandomness::Global, "global"}}};
constexpr const auto& enum_names(StepRandomness) { return kStepRandomnessNames; }

enum class AugmentMode { Ada, Fixed, NoAug };  // augment.mode, the reference's --aug
inline constexpr EnumNames<AugmentMode, 3> kAugmentModeNames{
    {{AugmentMode::Ada, "ada"}, {AugmentMode::Fixed, "fixed"}, {AugmentMode::NoAug, "noaug"}}};
constexpr const auto& enum_names(AugmentMode) { return kAugmentModeNames; }

struct TrainConfig {
  struct Run {
    std::string outdir = "runs";
    std::string desc;                    // run directory suffix; empty: <dataset>-<preset>
    std::string preset = "config-f";     // name of the preset the config came from
    DeviceChoice device = DeviceChoice::Auto;
    int threads = 0;                     // CPU threads per process; 0: the node's cores / its processes
    bool allow_tf32 = false;             // TF32 in CUDA matmuls and cuDNN convs (the reference: off)
    Float32Convolutions float32_convolutions = Float32Convolutions::Ieee;  // CUDA: FFMA, as the reference
    bool cudnn_benchmark = true;         // cuDNN picks the fastest algorithm per shape (the reference: on)
    bool conv2d_gradfix = true;          // CUDA: second-order gradients by ordinary convolutions (as the reference)
    ReducedType mixed_precision = ReducedType::Auto;  // auto: float16 on CUDA, off on the CPU
    ChannelsLastBlocks channels_last = ChannelsLastBlocks::Auto;  // activations NHWC; auto: reduced on CUDA, else off
    HostSyncCheck host_sync_check = HostSyncCheck::Off;  // ops that make the host wait for the GPU inside a step
    bool cuda_graphs = false;            // CUDA: each training phase captured once, then replayed (phase_graphs.h)
    int image_snapshot_ticks = 50;
    int network_snapshot_ticks = 50;
    int grid_w = 0;                      // sample grid columns; 0: as the reference (7680 / W, 7-32)
    int grid_h = 0;
  } run;
  struct Data : data::DatasetOptions, data::PrefetchOptions {
    Data() { path = "/usr/share/datasets/fashion-mnist"; }
    bool mirror = false;                 // random horizontal flips of the real images
  } data;
  // The network options; c_dim, img_resolution and img_channels come from the dataset, and the
  // precision's reduced type from run.mixed_precision (generator_options() in trainer.h).
  struct Generator : nn::GeneratorOptions {
    FusedModconv fused_modconv = FusedModconv::Auto;
  } G;
  struct Discriminator : nn::DiscriminatorOptions {
    int64_t freeze_layers = 0;           // D's first N layers (the reference's --freezed) are not trained
  } D;
  LossOptions loss;
  // Adaptive discriminator augmentation (docs/training.md, "Augmentation"): the images D sees go
  // through the augmentation pipeline with probability p, which ada adjusts from D's real logits.
  struct Augment {
    AugmentMode mode = AugmentMode::NoAug;
    double p = 0;                        // fixed: the probability; ada: the one it starts from
    double target = 0.6;                 // ada: the mean sign of D's real logits it steers to
    std::string pipe = "bgc";            // the pipeline (the reference's --augpipe)
    int64_t interval = 4;                // ada: steps between adjustments
    config::IntOrAuto kimg{0, true};     // ada: kimg for p to move by 1; auto: 500, 100 when fine-tuning
  } augment;
  struct Optim : AdamMoments {          // optim.beta1, beta2, eps: the same for G and D
    double G_lr = 0.002;
    double D_lr = 0.002;
    int64_t G_reg_interval = 4;
    int64_t D_reg_interval = 16;
  } optim;
  struct Train {
    int64_t seed = 0;
    int64_t batch = 32;
    config::IntOrAuto batch_gpu;         // per-process batch of one accumulation round; 0: batch / world;
                                         // auto: the largest that fits in the device's memory (batch_probe.h)
    double total_kimg = 25000;
    double kimg_per_tick = 4;
    double ema_kimg = 10;
    double ema_rampup = 0;               // 0: none (cifar: 0.05)
  } train;
  struct Dist : dist::CommunicatorSettings {  // dist.backend, dist.timeout (its timeout_seconds)
    double bucket_mb = 25;               // gradient fusion bucket size
    bool overlap = true;                 // allreduce buckets during backward
    StepRandomness rng = StepRandomness::Rank;  // rank: seed per rank (the paper's); global: world-size invariant
  } dist;
  std::vector<std::string> metrics;      // evaluated during training, e.g. fid50k_full, kid50k_full
  struct Metric {
    std::string detector;                // TorchScript feature detector (Inception .pt or built-in)
    std::string pr_detector;             // the pr and ppl metrics' (NVIDIA's vgg16.pt); empty: `detector`
    int ticks = 0;                       // evaluate every N ticks; 0: at every network snapshot
    std::string cache_dir;               // real stats; empty: ${XDG_CACHE_HOME:-~/.cache}/stylegan2-cpp/gan-metrics
    int64_t batch = 64;                  // images per block (fixed, so results do not depend on the world)
    int64_t seed = 0;                    // fakes' latents and noise
  } metric;
};

const config::Schema<TrainConfig>& train_schema();

// How the run's ops compute (sg2/ops/compute_settings.h): the fast kernels, run.conv2d_gradfix and
// run.float32_convolutions on CUDA. The trainer gives it to its networks; so do the commands that
// load a snapshot to run it.
ops::ComputeSettings compute_settings_of(const TrainConfig& config);

// metric.cache_dir, or the per-user default when it is empty.
std::string metric_cache_dir(const TrainConfig& config);

// The detector file a metric uses: metric.pr_detector for pr<...> and ppl* (metric.detector where that is empty),
// metric.detector for the others; empty when none is set.
std::string metric_detector(const TrainConfig& config, const std::string& metric);

// Images per process and round validate() accepts: far more than any device holds the activations of.
constexpr int64_t kMaxBatchPerRound = 65536;

// Checks combinations no single field can (batch vs batch_gpu vs world size, mbstd groups, ...).
// Errors name the keys and say which values would work.
void validate(const TrainConfig& config, int world_size);
// The part of validate() that an evaluation of a snapshot needs (metric.*).
void validate_metric_options(const TrainConfig& config);

// G.fused_modconv decoded once: "true" fuses everywhere, "false" nowhere, "auto" in inference only
// (sample grids), as the reference's training loop.
bool fused_modconv_in_training(const TrainConfig& config);
bool fused_modconv_in_inference(const TrainConfig& config);

// augment.kimg resolved: auto is 500, as the reference (a fine-tuning run resolves it to 100 before).
int64_t ada_kimg(const TrainConfig& config);

// The config of a run that fine-tunes an imported network, as the reference's --resume sets it:
// ADA reacts faster (augment.kimg auto -> 100) and the EMA has no ramp-up. notes: what changed.
TrainConfig fine_tuning_config(const TrainConfig& config, std::vector<std::string>* notes);

// Per-process batch of one accumulation round, and number of rounds per step.
int64_t batch_per_round(const TrainConfig& config, int world_size);
int64_t rounds_per_step(const TrainConfig& config, int world_size);

// A warning when D.mbstd_group_size exceeds the per-round batch, whose size the groups then take (the
// reference's min(group, batch)), so D's statistic depends on the world size; "" otherwise.
std::string mbstd_group_warning(const TrainConfig& config, int world_size);

}  // namespace sg2::train
