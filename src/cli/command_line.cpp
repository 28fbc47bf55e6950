#include "sg2/cli/command_line.h"

#include "sg2/cli/local_launch.h"
#include "sg2/cli/presets.h"
#include "sg2/cli/run_setup.h"

#include "sg2/core/error.h"
#include "sg2/core/logging.h"
#include "sg2/core/system.h"
#include "sg2/data/atomic_file.h"
#include "sg2/device/cuda_device.h"
#include "sg2/distributed/consistency.h"
#include "sg2/ops/tf32_split.h"
#include "sg2/train/out_of_memory.h"
#include "sg2/train/run_dir.h"
#include "sg2/train/run_record.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/trainer.h"
#include "sg2/train/training_loop.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <algorithm>
#include <iostream>
#include <optional>
#include <thread>

namespace sg2::cli {

using namespace train;  // the command layer drives the training library

namespace fs = std::filesystem;

namespace {

bool key_shown(const std::string& key, const std::vector<std::string>& shown) {
  if (shown.empty()) return true;
  return std::any_of(shown.begin(), shown.end(), [&](const std::string& s) {
    return key == s || (!s.empty() && s.back() == '.' && key.rfind(s, 0) == 0);
  });
}

}  // namespace

void ConfigOptions::add_to(CLI::App& app, const std::vector<std::string>& shown) {
  // A preset's name becomes its file at parsing, so config_file() is a path for everyone after.
  const CLI::Validator preset_or_file_path(
      [](std::string& value) {
        try {
          value = preset_or_file(value);
          return std::string();
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
      },
      "NAME|FILE");
  app.add_option("--config,--cfg", config_file_, "A preset's name (config-f, paper256, ...: configs/NAME.yaml) or a "
                 "YAML config file")->transform(preset_or_file_path);
  const TrainConfig defaults;
  config::add_cli_options(train_schema(), app, cli_, defaults);
  for (const auto& [flag, key] : std::vector<std::pair<std::string, std::string>>{{"--data", "data.path"},
                                                                                 {"--outdir", "run.outdir"},
                                                                                 {"--kimg", "train.total_kimg"},
                                                                                 {"--batch", "train.batch"},
                                                                                 {"--seed", "train.seed"},
                                                                                 {"--detector", "metric.detector"},
                                                                                 {"--aug", "augment.mode"},
                                                                                 {"--p", "augment.p"},
                                                                                 {"--target", "augment.target"},
                                                                                 {"--augpipe", "augment.pipe"},
                                                                                 {"--freezed", "D.freeze_layers"}}) {
    config::add_cli_alias(train_schema(), app, cli_, flag, key);
  }
  for (const auto& binding : cli_.bindings) {
    if (!key_shown(binding.key, shown)) binding.option->group("");  // accepted, not listed
  }
  app.allow_extras();  // unknown --keys get a suggestion in resolve()
  app_ = &app;
}

namespace {

// An existing file or directory as an absolute path, so that a snapshot's config names it from any
// directory; anything else (synthetic, a path that does not exist) as given.
std::string absolute_if_exists(const std::string& path) {
  std::error_code error;
  if (path.empty() || !fs::exists(path, error)) return path;
  const fs::path absolute = fs::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

}  // namespace

TrainConfig ConfigOptions::resolve(const std::string& snapshot_yaml) const {
  const auto& schema = train_schema();
  if (app_ != nullptr) config::reject_extras(schema, app_->remaining());
  TrainConfig config;
  if (!snapshot_yaml.empty()) config = schema.from_yaml_string(snapshot_yaml, "snapshot config");
  const std::string snapshot_data = config.data.path;
  if (!config_file_.empty()) schema.read_yaml_file(config, config_file_);
  config::apply_cli(schema, config, cli_);
  std::error_code error;
  const bool data_from_snapshot = !snapshot_yaml.empty() && config.data.path == snapshot_data;
  SG2_CHECK(!data_from_snapshot || config.data.path.empty() || config.data.path == "synthetic" ||
                fs::exists(config.data.path, error),
            "data.path '{}', the snapshot's training data, does not exist here (from {}): pass the dataset with "
            "--data PATH", config.data.path, fs::current_path(error).string());
  for (std::string* path : {&config.data.path, &config.metric.detector, &config.metric.pr_detector}) {
    *path = absolute_if_exists(*path);
  }
  return config;
}

std::unique_ptr<dist::Session> start_session(const TrainConfig& config, bool verbose) {
  const dist::CommunicatorOptions options{
      config.dist, at::Device(at::kCPU),  // the device: device_for's, once the world is known
      [&](const dist::World& world) { return resolve_device(config.run.device, world.local_rank); }};
  auto session = dist::Session::start(options);
  init_logging(session->world().rank, verbose);
  return session;
}

void check_config_same_on_every_rank(const TrainConfig& config, dist::Session& session) {
  dist::check_same_lines_on_every_rank(session.comm(), train_schema().to_key_value_lines(config), "the config");
}

namespace {

// ", host synchronisation in a step: error", or why there is nothing to check; "" when off.
std::string host_sync_check_note(const TrainConfig& c) {
  if (c.run.host_sync_check == HostSyncCheck::Off) return "";
  if (!host_sync_check_available()) return ", no host synchronisation check (LibTorch without CUDA)";
  return fmt::format(", host synchronisation in a step: {}", name_of(c.run.host_sync_check));
}

}  // namespace

std::string apply_libtorch_settings(const TrainConfig& c, const dist::World& world) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = c.run.threads > 0 ? c.run.threads : std::max(1, cores / std::max(world.local_size, 1));
  at::set_num_threads(threads);
  limit_blas_threads();
  at::globalContext().setAllowTF32CuBLAS(c.run.allow_tf32);
  at::globalContext().setAllowTF32CuDNN(c.run.allow_tf32);
  at::globalContext().setBenchmarkCuDNN(c.run.cudnn_benchmark);
  const ops::ComputeSettings compute = compute_settings_of(c);
  const char* split = compute.tf32_split != ops::DeviceSet::None ? ", float32 convolutions in 3xTF32" : "";
  const char* gradfix = compute.conv2d_gradfix == ops::DeviceSet::None ? ", conv2d_gradfix off" : "";
  return fmt::format("{} CPU threads ({} cores, {} processes on this node), TF32 {}{}, cuDNN benchmark {}{}{}{}",
                     threads, cores, world.local_size, c.run.allow_tf32 ? "on" : "off", split,
                     c.run.cudnn_benchmark ? "on" : "off", gradfix, host_sync_check_note(c),
                     c.run.cuda_graphs ? ", phases replayed from CUDA graphs" : "");
}

std::string compute_settings_warning(const TrainConfig& config, const at::Device& device) {
  if (!device.is_cuda()) return "";
  return ops::tf32_split_warning(compute_settings_of(config).tf32_split, cuda_compute_capability(device.index()));
}

void TrainCommand::add_to(CLI::App& app) {
  config_.add_to(app);
  // An empty value (a job script's variable that was never set) must not start a new run of the defaults.
  const CLI::Validator not_empty(
      [](const std::string& value) {
        return value.empty() ? std::string("an empty value; give a snapshot file, a run directory or 'latest'") : "";
      },
      "");
  app.add_option("--resume", resume_,
                 "Continue a run exactly: a snapshot file, a run directory (its latest snapshot), or 'latest'")
      ->check(not_empty);
  app.add_option("--gpus", gpus_, "Start N ranks on this node, one GPU each (CPU ranks where there is none), as "
                 "train.py --gpus N; not under mpirun, srun or stylegan2_launch, which start the ranks themselves")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--dry-run", dry_run_, "Print the resolved config, the world it would use and the library versions, then exit");
  app.add_flag("-v,--verbose", verbose_, "More log output");
}

namespace {

// A snapshot in a run directory (one with config.yaml) continues there; one outside any (copied,
// downloaded) continues in a new run directory under run.outdir, not beside the file.
std::string new_or_resumed_run_dir(const TrainConfig& config, const data::Dataset& dataset,
                                   const std::string& snapshot_path, bool is_root) {
  const fs::path snapshot_dir = fs::path(snapshot_path).parent_path();
  if (!snapshot_path.empty() && fs::exists(snapshot_dir / "config.yaml")) return snapshot_dir.string();
  if (!is_root) return "";  // only rank 0 writes files
  const std::string desc = config.run.desc.empty() ? dataset.name() + "-" + config.run.preset : config.run.desc;
  return create_run_dir(config.run.outdir, desc);
}

}  // namespace

int TrainCommand::run() {
  init_logging(0, verbose_);
  install_stop_signal_handlers();
  std::string snapshot_path;
  std::optional<Snapshot> snapshot;
  if (!resume_.empty()) {
    snapshot_path = resolve_resume(resume_, config_.resolve().run.outdir);
    snapshot = load_snapshot(snapshot_path);
  }
  const TrainConfig config = config_.resolve(snapshot ? snapshot->config_yaml : "");
  if (gpus_ > 0) return launch_local_ranks(gpus_, config);
  const Snapshot* loaded = snapshot ? &*snapshot : nullptr;
  return run_session_on_every_rank("stylegan2_train", config, verbose_, [&](dist::Session& session) {
    if (dry_run_) return print_dry_run(config, session);
    return naming_the_batch_on_out_of_memory(config, session.world().size,
                                             [&] { return train(config, session, snapshot_path, loaded); });
  });
}

int naming_the_batch_on_out_of_memory(const TrainConfig& config, int world_size, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    if (!is_out_of_memory(e)) throw;
    SG2_FAIL("out of memory with train.batch_gpu = {} images per process and round (train.batch {} over {} "
             "processes, {} rounds per step): lower train.batch_gpu to accumulate over more rounds ({})",
             batch_per_round(config, world_size), config.train.batch, world_size, rounds_per_step(config, world_size),
             message_of(e));
  }
}

int run_on_every_rank(const char* program, dist::Session& session, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    if (session.world().size == 1) throw;
    // Logged before ending the job: MPI_Abort ends this process too.
    log_fatal_error(fmt::format("{}: error on rank {} of {} (host {}): {}", program, session.world().rank,
                                session.world().size, hostname(), message_of(e)));
    dist::abort_job(message_of(e));
    return 1;  // not launched by MPI: the launcher ends the other ranks
  }
}

int run_session_on_every_rank(const char* program, const TrainConfig& config, bool verbose,
                              const std::function<int(dist::Session&)>& body) {
  auto session = start_session(config, verbose);
  return run_on_every_rank(program, *session, [&] {
    check_config_same_on_every_rank(config, *session);
    return body(*session);
  });
}

int TrainCommand::print_dry_run(const TrainConfig& config, dist::Session& session) {
  const dist::World& world = session.world();
  validate(config, world.size);
  const auto dataset = train::open_configured_dataset(config);  // a dataset that cannot be read fails here
  if (!world.is_root()) return 0;
  const std::string mbstd_warning = mbstd_group_warning(config, world.size);
  std::cout << train_schema().to_yaml_string(config)
            << fmt::format("# world: {} processes ({} per node), launcher {}, backend {}, device of rank 0 {}\n",
                           world.size, world.local_size, dist::to_string(dist::detect_launcher()),
                           session.comm().backend(), session.comm().device().str())
            << fmt::format("# dataset: {} ({}, {}x{}x{}, {})\n", dataset->name(), counted(dataset->size(), "image"),
                           dataset->shape().channels, dataset->resolution(), dataset->resolution(),
                           dataset->label_dim() > 0 ? "labels of " + counted(dataset->label_dim(), "value")
                                                    : "no labels used")
            << fmt::format("# per step: {} images = {} processes x {} rounds x {} images\n", config.train.batch,
                           world.size, rounds_per_step(config, world.size), batch_per_round(config, world.size))
            << (mbstd_warning.empty() ? "" : "# warning: " + mbstd_warning + "\n")
            << "# versions: " << library_versions().dump() << ", source " << source_commit() << "\n";
  return 0;
}

int TrainCommand::train(const TrainConfig& requested, dist::Session& session, const std::string& snapshot_path,
                        const Snapshot* snapshot) {
  const dist::World& world = session.world();
  const ReadyRun run = set_up_run(requested, session.comm(), world, snapshot, snapshot_path);
  if (!run.compute_warning.empty()) spdlog::warn("{}", run.compute_warning);
  const TrainConfig& config = run.config;
  const data::Dataset& dataset = *run.dataset;
  Trainer& trainer = *run.trainer;
  const at::Device device = trainer.device();
  const bool imported = snapshot != nullptr && snapshot->imported();
  // A snapshot already at train.total_kimg: nothing to train, and no run directory to make for it.
  if (snapshot && !imported && trainer.progress().cur_nimg >= images_of_kimg(config.train.total_kimg)) {
    if (world.is_root()) {
      std::cout << fmt::format("{} is at {:.3f} kimg, train.total_kimg is {}: nothing to train; raise it (--kimg) to "
                               "continue\n", snapshot_path, trainer.progress().cur_nimg / 1e3, config.train.total_kimg);
    }
    return 0;
  }
  // An imported network starts a new run (fine-tuning); a training snapshot continues its own.
  const std::string continued = imported ? std::string() : snapshot_path;
  // Every rank logs its warnings and errors to the run's log.txt where the directory is shared.
  const std::string run_dir =
      session.comm().broadcast_bytes(new_or_resumed_run_dir(config, dataset, continued, world.is_root()), 0);
  std::optional<RunDirLock> run_dir_lock;  // held until the run ends: no second run writes here meanwhile
  if (world.is_root()) run_dir_lock.emplace(run_dir);
  if (!world.is_root() && fs::is_directory(run_dir)) add_log_file(run_dir + "/log.txt");
  if (world.is_root()) {
    add_log_file(run_dir + "/log.txt");
    for (const std::string& file : data::remove_interrupted_writes(run_dir))
      spdlog::warn("Removed '{}', left by a write that was interrupted", file);
    const std::string config_yaml = train_schema().to_yaml_string(config);
    data::write_file_atomically(run_dir + "/config.yaml", config_yaml.data(), config_yaml.size());
    append_run_record(run_dir, RunStart{world.size, session.comm().backend(), dist::to_string(dist::detect_launcher()),
                                        device.str(), snapshot_path});
  }
  spdlog::info("Run directory: {}", run_dir);
  if (!snapshot_path.empty()) spdlog::info("{} {}", imported ? "Fine-tuning the imported networks of" : "Resumed from", snapshot_path);
  if (!run.fine_tuning.empty()) spdlog::info("Fine-tuning, as the reference's --resume: {}", fmt::join(run.fine_tuning, ", "));
  const TrainConfig::Augment& aug = config.augment;
  if (aug.mode == AugmentMode::Ada) {
    spdlog::info("Augmentation: ada, pipeline {}, p from {} towards a mean real sign of {}, adjusted every {} steps "
                 "by up to 1 per {} kimg", aug.pipe, aug.p, aug.target, aug.interval, ada_kimg(config));
  } else if (aug.mode == AugmentMode::Fixed) {
    spdlog::info("Augmentation: fixed, pipeline {}, p {}", aug.pipe, aug.p);
  }
  if (const auto& frozen = trainer.frozen_D_layers(); !frozen.empty()) {
    spdlog::info("Freeze-D: D's first {} layers are not trained ({})", frozen.size(), fmt::join(frozen, ", "));
  }
  spdlog::info("World: {} processes, backend {}, rng {}, {} rounds of {} images per process and step",
               world.size, session.comm().backend(), name_of(config.dist.rng), rounds_per_step(config, world.size),
               batch_per_round(config, world.size));
  const std::string mbstd_warning = mbstd_group_warning(config, world.size);
  if (world.is_root() && !mbstd_warning.empty()) spdlog::warn(mbstd_warning);
  spdlog::info("Dataset: {} ({}, {}x{}x{}, {}), device {}", dataset.name(), counted(dataset.size(), "image"),
               dataset.shape().channels, dataset.resolution(), dataset.resolution(),
               dataset.label_dim() > 0 ? "labels of " + counted(dataset.label_dim(), "value") : "no labels used",
               device.str());
  spdlog::info("Compute: {}", run.compute);
  if (!run.batch_report.empty()) spdlog::info(run.batch_report);
  spdlog::info("G: {} parameters, D: {} parameters", nn::count_parameters(trainer.G()),
               nn::count_parameters(trainer.D()));
  const nn::GeneratorOptions& g = trainer.G().options;
  const nn::DiscriminatorOptions& d = trainer.D().options;
  spdlog::info("Precision: {}", nn::describe_precision(g, d));
  for (const std::string& warning : {g.precision.overflow_warning("G", g.img_resolution, g.conv_clamp),
                                     d.precision.overflow_warning("D", d.img_resolution, d.conv_clamp)}) {
    if (!warning.empty()) spdlog::warn(warning);
  }

  TrainingLoop loop(trainer, run_dir, !continued.empty());
  const bool completed = loop.run();
  if (!completed) return 128 + loop.stop_signal();
  spdlog::info("Done. Run directory: {}", run_dir);
  return 0;
}


}  // namespace sg2::cli
