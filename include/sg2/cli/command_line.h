#pragma once
// Command lines of the apps that take a training config. The config is layered:
// defaults (config-f) <- the snapshot's config (on resume) <- --config FILE <- --key value flags.

#include "sg2/core/config_cli.h"
#include "sg2/data/dataset.h"
#include "sg2/distributed/session.h"
#include "sg2/train/config.h"
#include "sg2/train/snapshot.h"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

namespace sg2::cli {

using train::TrainConfig;

class ConfigOptions {
 public:
  // Adds --config FILE, one --<key> flag per config field, and short aliases (--data, --outdir,
  // --kimg, --batch, --seed, --detector). shown: the keys (or "section." prefixes) --help lists,
  // and the aliases it offers; empty: all. The others are still accepted, not listed.
  void add_to(CLI::App& app, const std::vector<std::string>& shown = {});
  // Resolves the layers; `snapshot_yaml` (may be empty) is the config stored in a snapshot.
  TrainConfig resolve(const std::string& snapshot_yaml = "") const;
  const std::string& config_file() const { return config_file_; }
  bool given(const std::string& key) const { return config::cli_has(cli_, key); }  // on the command line

 private:
  std::string config_file_;
  config::CliValues cli_;
  CLI::App* app_ = nullptr;
};

// Bootstraps the launch found in the environment for `config` (dist.backend, dist.timeout, the
// device of run.device chosen by local rank) and makes the logging rank-aware.
std::unique_ptr<dist::Session> start_session(const TrainConfig& config, bool verbose = false);

// Cross-rank contract: all ranks call it. Fails on every rank, naming the first differing key, unless
// every rank resolved the same config (ranks started with other options would otherwise build other
// networks and fail in a collective that cannot say why).
void check_config_same_on_every_rank(const TrainConfig& config, dist::Session& session);

// LibTorch's process-wide settings for a run: CPU threads (run.threads; 0: the node's cores divided
// by the processes on it, so ranks do not oversubscribe the cores), OpenBLAS kept to one thread, and
// the float32 precision policy (run.allow_tf32, run.cudnn_benchmark). Returns a line describing them
// and the run's compute settings (train::compute_settings_of), which its networks get.
std::string apply_libtorch_settings(const TrainConfig& config, const dist::World& world);

// What in the config's compute settings would run slower than their default on `device`: 3xTF32 on
// a GPU without TF32. Empty where nothing would.
std::string compute_settings_warning(const TrainConfig& config, const at::Device& device);

// stylegan2_train: parses its command line and trains (new run or --resume).
class TrainCommand {
 public:
  void add_to(CLI::App& app);
  // Bootstraps the launch (mpirun, srun, stylegan2_launch or a plain process) and trains. An error
  // on one rank of several ends the whole job (MPI_Abort / the launcher) with a message naming it.
  int run();

 private:
  // snapshot: the --resume file, loaded (and checksummed) once by run(); null for a new run.
  int train(const TrainConfig& config, dist::Session& session, const std::string& snapshot_path,
            const train::Snapshot* snapshot);
  int print_dry_run(const TrainConfig& config, dist::Session& session);
  ConfigOptions config_;
  std::string resume_;
  int gpus_ = 0;  // --gpus N: start N ranks on this node (local_launch.h); 0: this process is the run
  bool dry_run_ = false;
  bool verbose_ = false;
};

// Runs `body`, turning an allocation failure (host or device) into an error that names train.batch_gpu
// and train.batch (the allocator's own message names no key).
int naming_the_batch_on_out_of_memory(const TrainConfig& config, int world_size, const std::function<int()>& body);

// Runs `body` on every rank of `session`. With several ranks an error on one prints "error on rank
// R of N (host H)" and ends the whole job (MPI_Abort / the launcher), so no rank waits forever.
int run_on_every_rank(const char* program, dist::Session& session, const std::function<int()>& body);

// How every program that may run on several ranks starts: the session of `config`'s launch, then
// `body` under run_on_every_rank, after check_config_same_on_every_rank.
int run_session_on_every_rank(const char* program, const TrainConfig& config, bool verbose,
                              const std::function<int(dist::Session&)>& body);

// stylegan2_metrics: FID / KID of a snapshot's G_ema, under any launcher; the numbers the training
// loop computes for the same snapshot and metric options.
class MetricsCommand {
 public:
  void add_to(CLI::App& app);
  int run();

 private:
  ConfigOptions config_;
  std::string network_;
  bool no_log_ = false;
  bool verbose_ = false;
};

// stylegan2_metrics train-detector: trains the built-in feature detector on a labelled dataset.
class DetectorCommand {
 public:
  void add_to(CLI::App& app);
  int run();

 private:
  std::string data_, split_ = "train", heldout_split_, out_;
  bool overwrite_ = false;
  int threads_ = 0;
  int64_t epochs_ = 2, batch_ = 128, max_images_ = 0, seed_ = 0;
  double learning_rate_ = 2e-3;
};

}  // namespace sg2::cli
