#include "sg2/train/config.h"

#include "sg2/core/error.h"
#include "sg2/metrics/evaluator.h"
#include "sg2/train/augment.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace sg2::train {

namespace {

// SG2_FIELD(G.z_dim, "help") registers TrainConfig::G.z_dim under the key "G.z_dim".
#define SG2_FIELD(path, help) s.add(#path, [](TrainConfig& c) -> auto& { return c.path; }, help)

config::Schema<TrainConfig> make_schema() {
  config::Schema<TrainConfig> s;
  SG2_FIELD(run.outdir, "Directory that holds the run directories");
  SG2_FIELD(run.desc, "Run directory suffix; empty: <dataset>-<preset>");
  SG2_FIELD(run.preset, "Name of the preset this configuration came from");
  SG2_FIELD(run.device, "Device to train on (auto: CUDA where LibTorch sees a GPU, else the CPU)");
  SG2_FIELD(run.threads, "CPU threads per process (0: the node's cores divided by its processes)");
  SG2_FIELD(run.allow_tf32, "Allow TF32 in CUDA matmuls and cuDNN convolutions (off as the reference: full fp32)");
  SG2_FIELD(run.float32_convolutions,
            "Float32 convolutions on CUDA: ieee (float32 arithmetic, as the reference with TF32 off) or 3xtf32 (each "
            "operand split into a TF32 part and its rest, three TF32 tensor-core passes: float32's accuracy, faster "
            "where the tensor cores outrun the FP32 units; training's convolutions through conv2d_gradfix and those "
            "without gradients)");
  SG2_FIELD(run.cudnn_benchmark, "Let cuDNN time its algorithms per shape and keep the fastest (on as the reference)");
  s.retire("run.fir_kernel", "upfirdn2d has one channels_last kernel on CUDA");
  SG2_FIELD(run.conv2d_gradfix,
            "On CUDA, differentiate convolutions so that R1's and path length's second-order gradients run "
            "ordinary convolution kernels (on as the reference's conv2d_gradfix)");
  SG2_FIELD(run.mixed_precision, "Type of the G.num_fp16_res / D.num_fp16_res highest resolutions (auto: float16 on "
                                 "CUDA as the reference, off on the CPU; off: all float32)");
  SG2_FIELD(run.channels_last, "Blocks whose activations are channels_last (NHWC) in memory, the tensor cores' layout: "
                               "auto (reduced on CUDA, where it measured faster, off on the CPU), off (as the "
                               "reference), reduced (those in run.mixed_precision's type, as the reference's "
                               "fp16_channels_last), all");
  SG2_FIELD(run.host_sync_check, "LibTorch ops that make the host wait for the GPU inside a training step (.item(), "
                                 "blocking copies, synchronizes), and batches in pageable memory: off, warn, error");
  SG2_FIELD(run.cuda_graphs, "On CUDA, capture each training phase (its forward and backward passes) into a CUDA "
                             "graph after two calls without, and replay it from then on: one launch instead of a few "
                             "thousand ops for the host to issue (the same training)");
  SG2_FIELD(run.image_snapshot_ticks, "Write a sample grid every N ticks (0: never)");
  SG2_FIELD(run.network_snapshot_ticks, "Write a snapshot every N ticks (0: only at the end)");
  SG2_FIELD(run.grid_w, "Sample grid columns (0: as the reference, 7680 / resolution clipped to 7-32)");
  SG2_FIELD(run.grid_h, "Sample grid rows (0: as the reference, 4320 / resolution clipped to 4-32)");

  SG2_FIELD(data.path,
            "Dataset: a directory of <name>-rNN.tfrecords, a stylegan2-ada ZIP or image folder, the Fashion-MNIST IDX "
            "directory, or 'synthetic'");
  SG2_FIELD(data.split, "Dataset split (Fashion-MNIST: train, test, all)");
  SG2_FIELD(data.use_labels, "Train a conditional model on the dataset's class labels");
  SG2_FIELD(data.mirror, "Random horizontal flips of the real images");
  SG2_FIELD(data.max_images, "Use only the first N images (0: all)");
  SG2_FIELD(data.resolution, "Expected image resolution (0: the dataset's; required for synthetic)");
  SG2_FIELD(data.channels, "Expected image channels (0: the dataset's; synthetic: 3)");
  SG2_FIELD(data.workers, "Loader threads decoding batches ahead of training (0: load in the training thread)");
  SG2_FIELD(data.prefetch, "Batches decoded ahead of training (the bound of the loader's queue)");

  // G.* and D.*: the networks' own keys (nn/options.h), less those the dataset gives.
  s.include("G.", nn::generator_schema(), [](TrainConfig& c) -> nn::GeneratorOptions& { return c.G; },
            nn::dataset_given_keys());
  s.add("G.num_fp16_res", [](TrainConfig& c) -> auto& { return c.G.precision.num_fp16_res; },
        "Synthesis blocks at the N highest resolutions compute in run.mixed_precision's type");
  SG2_FIELD(G.fused_modconv, "Modulated convolution as one grouped convolution (auto: in inference only)");
  s.include("D.", nn::discriminator_schema(), [](TrainConfig& c) -> nn::DiscriminatorOptions& { return c.D; },
            nn::dataset_given_keys());
  s.add("D.num_fp16_res", [](TrainConfig& c) -> auto& { return c.D.precision.num_fp16_res; },
        "Discriminator blocks at the N highest resolutions compute in run.mixed_precision's type");

  SG2_FIELD(D.freeze_layers, "Freeze-D: D's first N layers, counted as the reference counts them (fromrgb, conv0, "
                             "conv1, skip of each block from the highest resolution), are not trained");

  SG2_FIELD(augment.mode, "Discriminator augmentation: ada (p adjusted to augment.target), fixed (p = augment.p), "
                          "noaug");
  SG2_FIELD(augment.p, "Augmentation probability: fixed's, or the one ada starts from");
  SG2_FIELD(augment.target, "ada: the mean sign of D's real logits p is steered to");
  SG2_FIELD(augment.pipe, "Augmentation pipeline: blit, geom, color, filter, noise, cutout, bg, bgc, bgcf, bgcfn, "
                          "bgcfnc");
  SG2_FIELD(augment.interval, "ada: adjust p every N steps");
  SG2_FIELD(augment.kimg, "ada: thousands of images over which p can move by 1 (auto: 500, 100 when fine-tuning an "
                          "imported network)");

  SG2_FIELD(loss.r1_gamma, "R1 regularization weight gamma");
  SG2_FIELD(loss.pl_weight, "Path length regularization weight (0: off)");
  SG2_FIELD(loss.pl_decay, "Decay of the path length running mean");
  SG2_FIELD(loss.pl_batch_shrink, "Path length regularization runs on batch / N images");
  SG2_FIELD(loss.style_mixing_prob, "Probability of style mixing per minibatch");

  SG2_FIELD(optim.G_lr, "Generator learning rate");
  SG2_FIELD(optim.D_lr, "Discriminator learning rate");
  SG2_FIELD(optim.beta1, "Adam beta1");
  SG2_FIELD(optim.beta2, "Adam beta2");
  SG2_FIELD(optim.eps, "Adam epsilon");
  SG2_FIELD(optim.G_reg_interval, "Lazy regularization: path length every N minibatches (0: every step, no lazy)");
  SG2_FIELD(optim.D_reg_interval, "Lazy regularization: R1 every N minibatches (0: every step, no lazy)");

  SG2_FIELD(train.seed, "Random seed");
  SG2_FIELD(train.batch, "Total batch size of one step, over all processes");
  SG2_FIELD(train.batch_gpu, "Images per process and accumulation round (0: batch / world size; auto: the largest "
                             "that fits in the device's memory, probed at start)");
  SG2_FIELD(train.total_kimg, "Training length in thousands of real images");
  SG2_FIELD(train.kimg_per_tick, "Progress interval in thousands of images");
  SG2_FIELD(train.ema_kimg, "Half-life of the generator's moving average, in thousands of images");
  SG2_FIELD(train.ema_rampup, "EMA ramp-up: half-life at most cur_nimg * ramp (0: off)");

  SG2_FIELD(dist.backend, "Communication backend (auto: nccl on CUDA, mpi under mpirun/srun, gloo under "
                          "stylegan2_launch, local for one process)");
  SG2_FIELD(dist.bucket_mb, "Gradient fusion bucket size in MiB");
  SG2_FIELD(dist.overlap, "All-reduce gradient buckets during backward (false: after it)");
  SG2_FIELD(dist.rng, "Per-step randomness: rank (seed per rank, as the paper) or global (the same run for any "
                      "world size)");
  s.add("dist.timeout", [](TrainConfig& c) -> auto& { return c.dist.timeout_seconds; },
        "Seconds a rendezvous or collective may take before the job fails");

  SG2_FIELD(metrics, "Metrics evaluated during training: fid<N>[k][_full], kid<N>[k][_full], pr<N>[k]<nhood>[_full], "
                     "is<N>[k], ppl[2]_{z,w}{full,end}[_<N>[k]] (e.g. fid50k_full, pr50k3_full, is50k, ppl_wend)");
  SG2_FIELD(metric.detector, "Feature detector: a TorchScript file (NVIDIA's inception-2015-12-05.pt or one from "
                             "stylegan2_metrics train-detector)");
  SG2_FIELD(metric.pr_detector, "Feature detector of the pr and ppl metrics (NVIDIA's vgg16.pt, as the reference; "
                                "empty: metric.detector)");
  SG2_FIELD(metric.ticks, "Evaluate the metrics every N ticks (0: at every network snapshot)");
  SG2_FIELD(metric.cache_dir, "Cache of real-image statistics (empty: $XDG_CACHE_HOME or ~/.cache, then "
                                "/stylegan2-cpp/gan-metrics)");
  SG2_FIELD(metric.batch, "Images per evaluation block (part of what the result depends on)");
  SG2_FIELD(metric.seed, "Seed of the generated images' latents, labels and noise");
  return s;
}

#undef SG2_FIELD

std::string divisors_hint(int64_t value, int64_t limit) {
  std::string out;
  for (int64_t d = 1; d <= value && d <= limit; ++d) {
    if (value % d == 0) out += (out.empty() ? "" : ", ") + std::to_string(d);
  }
  return out;
}

}  // namespace

const config::Schema<TrainConfig>& train_schema() {
  static const config::Schema<TrainConfig> schema = make_schema();
  return schema;
}

ops::ComputeSettings compute_settings_of(const TrainConfig& c) {
  ops::ComputeSettings compute;
  compute.conv2d_gradfix = c.run.conv2d_gradfix ? ops::DeviceSet::Cuda : ops::DeviceSet::None;
  const bool split = c.run.float32_convolutions == Float32Convolutions::ThreeTf32;
  compute.tf32_split = split ? ops::DeviceSet::Cuda : ops::DeviceSet::None;
  return compute;
}

int64_t ada_kimg(const TrainConfig& c) { return c.augment.kimg.automatic ? 500 : c.augment.kimg.value; }

TrainConfig fine_tuning_config(const TrainConfig& c, std::vector<std::string>* notes) {
  TrainConfig tuned = c;
  if (c.augment.kimg.automatic) {
    tuned.augment.kimg = config::IntOrAuto(100);
    if (c.augment.mode == AugmentMode::Ada) notes->push_back("augment.kimg auto: 100 (ADA reacts faster)");
  }
  if (c.train.ema_rampup > 0) {
    tuned.train.ema_rampup = 0;
    notes->push_back(fmt::format("train.ema_rampup {} -> 0 (no ramp-up)", c.train.ema_rampup));
  }
  return tuned;
}

namespace {

void validate_augment(const TrainConfig& c) {
  const TrainConfig::Augment& a = c.augment;
  try {
    augment_pipeline(a.pipe);
  } catch (const std::exception& e) {
    SG2_FAIL("augment.pipe: {}", e.what());
  }
  SG2_CHECK(a.p >= 0 && a.p <= 1, "augment.p = {}: must lie in [0, 1]", a.p);
  SG2_CHECK(a.mode != AugmentMode::NoAug || a.p == 0, "augment.p = {} with augment.mode noaug: no pipeline runs; "
            "use augment.mode fixed (or ada, which starts from it)", a.p);
  SG2_CHECK(a.target >= 0 && a.target <= 1, "augment.target = {}: must lie in [0, 1]", a.target);
  SG2_CHECK(a.interval >= 1, "augment.interval = {}: must be >= 1 step", a.interval);
  SG2_CHECK(a.kimg.automatic || a.kimg.value >= 1, "augment.kimg = {}: must be >= 1 or auto", a.kimg.value);
  SG2_CHECK(a.mode == AugmentMode::NoAug || !c.run.cuda_graphs,
            "augment.mode {} with run.cuda_graphs: the augmentation sizes its padding on the host from each batch's "
            "transforms (as the reference), which a CUDA graph cannot replay; set run.cuda_graphs false or "
            "augment.mode noaug", name_of(a.mode));
  SG2_CHECK(c.D.freeze_layers >= 0, "D.freeze_layers = {}: must be >= 0", c.D.freeze_layers);
}

}  // namespace

bool fused_modconv_in_training(const TrainConfig& config) { return config.G.fused_modconv == FusedModconv::Always; }
bool fused_modconv_in_inference(const TrainConfig& config) { return config.G.fused_modconv != FusedModconv::Never; }

int64_t batch_per_round(const TrainConfig& c, int world_size) {
  const int64_t chosen = c.train.batch_gpu.automatic ? 0 : c.train.batch_gpu.value;
  return chosen > 0 ? chosen : c.train.batch / world_size;
}

int64_t rounds_per_step(const TrainConfig& c, int world_size) {
  return c.train.batch / (batch_per_round(c, world_size) * world_size);
}

std::string mbstd_group_warning(const TrainConfig& c, int world_size) {
  const int64_t group = c.D.mbstd_group_size, per_round = batch_per_round(c, world_size);
  if (group <= 0 || per_round >= group) return "";
  return fmt::format(
      "D.mbstd_group_size = {} but a round holds {} images per process (train.batch {} over {} processes): "
      "minibatch-std groups of {}, as the reference's min(group, batch){}, so D sees another statistic than "
      "with {} images per round; groups of {} take train.batch_gpu {} or more (so train.batch {} or more)",
      group, per_round, c.train.batch, world_size, per_round,
      per_round == 1 ? " (groups of 1: the feature is a constant)" : "", group, group, group, group * world_size);
}

void validate(const TrainConfig& c, int world_size) {
  const int64_t batch = c.train.batch;
  SG2_CHECK(batch >= 1, "train.batch = {}: must be >= 1", batch);
  SG2_CHECK(c.data.workers >= 0 && c.data.workers <= 64, "data.workers = {}: must be 0-64", c.data.workers);
  SG2_CHECK(c.data.prefetch >= 1, "data.prefetch = {}: must be >= 1", c.data.prefetch);
  SG2_CHECK(batch % world_size == 0,
            "train.batch = {} is not divisible by the world size {}; batches that work: multiples of {}; "
            "world sizes that work with this batch: {}",
            batch, world_size, world_size, divisors_hint(batch, 4096));
  const int64_t per_round = batch_per_round(c, world_size);
  SG2_CHECK(per_round >= 1 && (batch / world_size) % per_round == 0,
            "train.batch_gpu = {} does not divide the per-process batch {} (train.batch {} / world size {}); "
            "values that work: {}",
            c.train.batch_gpu.value, batch / world_size, batch, world_size, divisors_hint(batch / world_size, 4096));
  SG2_CHECK(per_round <= kMaxBatchPerRound,
            "train.batch_gpu: {} images per process and round (train.batch {} / world size {}) is more than the {} "
            "any device holds the activations of; set train.batch_gpu to accumulate over several rounds",
            per_round, batch, world_size, kMaxBatchPerRound);
  const int64_t group = c.D.mbstd_group_size;
  SG2_CHECK(group <= 0 || per_round % std::min(group, per_round) == 0,
            "D.mbstd_group_size = {} does not divide the per-round batch {} (train.batch_gpu); values that work: {}",
            group, per_round, divisors_hint(per_round, 64));
  SG2_CHECK(c.loss.pl_batch_shrink >= 1, "loss.pl_batch_shrink = {}: must be >= 1", c.loss.pl_batch_shrink);
  SG2_CHECK(c.loss.pl_weight == 0 || per_round >= c.loss.pl_batch_shrink,
            "loss.pl_batch_shrink = {} leaves no image of the per-round batch {}", c.loss.pl_batch_shrink, per_round);
  SG2_CHECK(c.train.total_kimg > 0, "train.total_kimg = {}: must be > 0", c.train.total_kimg);
  SG2_CHECK(c.train.kimg_per_tick > 0, "train.kimg_per_tick = {}: must be > 0", c.train.kimg_per_tick);
  SG2_CHECK(c.train.ema_kimg >= 0, "train.ema_kimg = {}: must be >= 0", c.train.ema_kimg);
  SG2_CHECK(std::isfinite(c.optim.G_lr) && std::isfinite(c.optim.D_lr) && c.optim.G_lr > 0 && c.optim.D_lr > 0,
            "optim.G_lr = {}, optim.D_lr = {}: must be finite and > 0", c.optim.G_lr, c.optim.D_lr);
  SG2_CHECK(c.optim.beta1 >= 0 && c.optim.beta1 < 1, "optim.beta1 = {}: must lie in [0, 1)", c.optim.beta1);
  SG2_CHECK(c.optim.beta2 >= 0 && c.optim.beta2 < 1, "optim.beta2 = {}: must lie in [0, 1)", c.optim.beta2);
  // A regularization interval beyond a million steps is a typo for 0 (off), not a schedule.
  SG2_CHECK(c.optim.G_reg_interval >= 0 && c.optim.G_reg_interval <= 1000000,
            "optim.G_reg_interval = {}: must be 0 (no lazy regularization) to 1000000", c.optim.G_reg_interval);
  SG2_CHECK(c.optim.D_reg_interval >= 0 && c.optim.D_reg_interval <= 1000000,
            "optim.D_reg_interval = {}: must be 0 (no lazy regularization) to 1000000", c.optim.D_reg_interval);
  SG2_CHECK(c.train.batch_gpu.automatic || c.train.batch_gpu.value >= 0,
            "train.batch_gpu = {}: must be 0 (train.batch / processes), a number of images, or auto",
            c.train.batch_gpu.value);
  nn::validate_own_options(c.G);
  nn::validate_own_options(c.D);
  SG2_CHECK(c.D.mbstd_group_size >= 0, "D.mbstd_group_size = {}: must be >= 0 (0 or null: the per-round batch)",
            c.D.mbstd_group_size);
  SG2_CHECK(c.run.image_snapshot_ticks >= 0, "run.image_snapshot_ticks = {}: must be >= 0 (0: never)",
            c.run.image_snapshot_ticks);
  SG2_CHECK(c.run.network_snapshot_ticks >= 0, "run.network_snapshot_ticks = {}: must be >= 0 (0: only at the end)",
            c.run.network_snapshot_ticks);
  SG2_CHECK(c.run.desc.size() <= 128 && c.run.desc.find('/') == std::string::npos && c.run.desc != "." &&
                c.run.desc != "..",
            "run.desc = '{}': must be a name of at most 128 characters without '/' (it ends the run directory's name)",
            c.run.desc.substr(0, 200));
  SG2_CHECK(c.loss.style_mixing_prob >= 0 && c.loss.style_mixing_prob <= 1,
            "loss.style_mixing_prob = {}: must lie in [0, 1]", c.loss.style_mixing_prob);
  SG2_CHECK(c.data.resolution == 0 || (c.data.resolution >= 8 && (c.data.resolution & (c.data.resolution - 1)) == 0),
            "data.resolution = {}: must be 0 (the dataset's) or a power of two >= 8", c.data.resolution);
  // Thread pools beyond these sizes only exhaust the process (creating them hangs or aborts).
  SG2_CHECK(c.run.threads >= 0 && c.run.threads <= 1024, "run.threads = {}: must be 0 (the node's cores divided by "
            "its processes) to 1024", c.run.threads);
  SG2_CHECK(c.data.workers >= 0 && c.data.workers <= 256, "data.workers = {}: must be 0 (load in the training "
            "thread) to 256", c.data.workers);
  SG2_CHECK(c.run.grid_w >= 0 && c.run.grid_w <= 128 && c.run.grid_h >= 0 && c.run.grid_h <= 128,
            "run.grid_w = {}, run.grid_h = {}: each must be 0 (as the reference) to 128", c.run.grid_w, c.run.grid_h);
  SG2_CHECK(c.data.max_images >= 0, "data.max_images = {}: must be >= 0 (0: all)", c.data.max_images);
  SG2_CHECK(std::isfinite(c.loss.r1_gamma) && c.loss.r1_gamma >= 0, "loss.r1_gamma = {}: must be >= 0 (0: off)",
            c.loss.r1_gamma);
  SG2_CHECK(std::isfinite(c.loss.pl_weight) && c.loss.pl_weight >= 0, "loss.pl_weight = {}: must be >= 0 (0: off)",
            c.loss.pl_weight);
  SG2_CHECK(c.loss.pl_decay >= 0 && c.loss.pl_decay <= 1, "loss.pl_decay = {}: must lie in [0, 1]", c.loss.pl_decay);
  SG2_CHECK(c.G.w_avg_beta != -1, "G.w_avg_beta = null (W's average not tracked): training tracks it for "
            "truncation; give a decay in [0, 1] (the reference's 0.995)");
  SG2_CHECK(c.G.w_avg_beta >= 0 && c.G.w_avg_beta <= 1, "G.w_avg_beta = {}: must lie in [0, 1]", c.G.w_avg_beta);
  SG2_CHECK(std::isfinite(c.optim.eps) && c.optim.eps > 0, "optim.eps = {}: must be > 0", c.optim.eps);
  SG2_CHECK(c.train.ema_rampup >= 0, "train.ema_rampup = {}: must be >= 0 (0: off)", c.train.ema_rampup);
  SG2_CHECK(c.dist.bucket_mb > 0, "dist.bucket_mb = {}: must be > 0", c.dist.bucket_mb);
  // At most 10^6 s (11.6 days): in milliseconds it still fits poll()'s int.
  SG2_CHECK(c.dist.timeout_seconds > 0 && c.dist.timeout_seconds <= 1e6,
            "dist.timeout = {}: must be > 0 and at most 1000000 seconds", c.dist.timeout_seconds);
  for (const std::string& name : c.metrics) {
    SG2_CHECK(!metric_detector(c, name).empty(),
              "metric {} needs metric.detector: NVIDIA's inception-2015-12-05.pt or a file from "
              "'stylegan2_metrics train-detector' (pr and ppl metrics: metric.pr_detector, NVIDIA's vgg16.pt, or else "
              "metric.detector)",
              name);
  }
  SG2_CHECK(c.metric.ticks >= 0, "metric.ticks = {}: must be >= 0 (0: at every network snapshot)", c.metric.ticks);
  validate_augment(c);
  validate_metric_options(c);
}

void validate_metric_options(const TrainConfig& c) {
  SG2_CHECK(c.metric.batch >= 1 && c.metric.batch <= 65536, "metric.batch = {}: must be 1 to 65536 images",
            c.metric.batch);
}

std::string metric_detector(const TrainConfig& c, const std::string& metric) {
  const auto kind = metrics::parse_metric(metric).kind;
  const bool vgg16 = kind == metrics::MetricSpec::Kind::PR || kind == metrics::MetricSpec::Kind::PPL;
  return vgg16 && !c.metric.pr_detector.empty() ? c.metric.pr_detector : c.metric.detector;
}

std::string metric_cache_dir(const TrainConfig& c) {
  if (!c.metric.cache_dir.empty()) return c.metric.cache_dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg != nullptr && *xdg != 0 ? xdg : std::string(home != nullptr ? home : ".") + "/.cache";
  return base + "/stylegan2-cpp/gan-metrics";
}

}  // namespace sg2::train
