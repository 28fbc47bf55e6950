#include "sg2/cli/bench_command.h"

#include "sg2/bench/bench_record.h"
#include "sg2/cli/run_setup.h"
#include "sg2/core/error.h"
#include "sg2/core/logging.h"

#include <filesystem>
#include <iostream>
#include <memory>

namespace sg2::cli {

using namespace bench;  // NOLINT(google-build-using-namespace): this file is the bench module's command line

namespace {

// --compute-alone: every rank trains its share of the global batch (train.batch / ranks) on a world
// of its own, all at once, so the ranks share the nodes (cores, PCIe, memory) as in a distributed run
// but send nothing; the times are the slowest rank's. The compute term of the scaling model.
train::TrainConfig with_rank_share_of_batch(train::TrainConfig config, int ranks) {
  SG2_CHECK(config.train.batch % ranks == 0,
            "--compute-alone: train.batch = {} is not divisible by the {} ranks of this launch", config.train.batch,
            ranks);
  config.train.batch /= ranks;
  config.dist.backend = dist::Backend::Local;
  return config;
}

int bench_training(const train::TrainConfig& requested, const BenchOptions& bench, const BenchOutput& output,
                   dist::Session& session) {
  const dist::World& world = session.world();
  const std::unique_ptr<dist::Communicator> alone =
      output.compute_alone ? dist::local_communicator(session.comm().device()) : nullptr;
  dist::Communicator& comm = alone ? *alone : session.comm();
  const ReadyRun run = set_up_run(alone ? with_rank_share_of_batch(requested, world.size) : requested, comm, world);
  if (world.is_root()) {
    std::cout << "# compute: " << run.compute << "\n";
    if (!run.compute_warning.empty()) std::cout << "# warning: " << run.compute_warning << "\n";
    if (!run.batch_report.empty()) std::cout << "# " << run.batch_report << "\n";
  }
  const train::TrainConfig& config = run.config;
  train::Trainer& trainer = *run.trainer;
  BenchResult result = run_benchmark(trainer, bench);
  if (alone) keep_slowest_rank(result, session.comm());
  if (!world.is_root()) return 0;
  if (alone) {
    std::cout << fmt::format("# compute alone: each of {} ranks trained {} images a step with no communication, at "
                             "the same time; the times are the slowest rank's, the table's img/s one rank's "
                             "({:.2f} img/s in all)\n",
                             world.size, config.train.batch,
                             static_cast<double>(config.train.batch * world.size) / result.step_seconds);
  }
  const dist::ReducerTimes& reduced = result.step_allreduce;
  std::cout << format_benchmark(result, trainer);
  const std::string times =
      comm.host_waits_for_collectives()
          ? fmt::format("allreduce per step busy {:.4f} s, exposed after backward {:.4f} s (overlap {:.0f}%)",
                        reduced.busy_seconds, reduced.exposed_seconds,
                        reduced.busy_seconds > 0 ? 100 * std::max(0.0, 1 - reduced.exposed_seconds / reduced.busy_seconds)
                                                 : 0)
          : "the allreduce runs on a GPU stream the host does not wait for: its times are not measured";
  std::cout << fmt::format("# {} ranks, backend {}: {}, {:.1f} MB of gradients per rank\n", world.size,
                           comm.backend(), times, reduced.bytes / 1e6);
  if (!output.jsonl.empty()) {
    const BenchLaunch launch{alone ? BenchMode::ComputeAlone : BenchMode::Distributed, world.size,
                             world.size / std::max(1, world.local_size), comm.backend(),
                             config.train.batch * (alone ? world.size : 1), comm.host_waits_for_collectives()};
    append_json_line(output.jsonl, training_bench_record(result, trainer, launch));
  }
  return 0;
}

int bench_simulated(const train::TrainConfig& config, SimulateOptions options, const BenchOutput& output,
                    dist::Session& session) {
  const dist::World& world = session.world();
  SG2_CHECK(options.phase_ms.size() == 4, "simulate --phase-ms: expected 4 values (Gmain,Greg,Dmain,Dreg), got {}",
            options.phase_ms.size());
  for (size_t i = 0; i < 4; ++i) {
    SG2_CHECK(options.phase_ms[i] >= 0, "simulate --phase-ms: value {} is {}: expected >= 0", i + 1, options.phase_ms[i]);
    options.simulation.phase_seconds[i] = options.phase_ms[i] * 1e-3;
  }
  const std::unique_ptr<dist::Communicator> alone =
      output.compute_alone ? dist::local_communicator(session.comm().device()) : nullptr;
  dist::Communicator& comm = alone ? *alone : session.comm();
  SimulatedTraining simulation(config, comm, options.simulation);
  SimulationResult result = run_simulation(simulation, options.warmup, options.cycles);
  {  // computing alone, the slowest rank's step; the CPU time of every rank
    const at::Tensor all = values_of_every_rank({result.step_seconds, result.cpu_seconds}, session.comm());  // [ranks, 2]
    if (alone) result.step_seconds = all.select(1, 0).max().item<double>();
    result.cpu_seconds = all.select(1, 1).sum().item<double>();
  }
  if (!world.is_root()) return 0;
  std::cout << fmt::format("# simulated: {} ranks, backend {}, byte scale {}, {}\n", world.size, comm.backend(),
                           options.simulation.byte_scale, alone ? "compute alone" : "distributed");
  std::cout << format_simulation(result, simulation);
  if (!output.jsonl.empty()) {
    const nlohmann::json launch = {{"mode", alone ? "compute_alone" : "distributed"},
                                   {"ranks", world.size},
                                   {"nodes", world.size / std::max(1, world.local_size)},
                                   {"backend", comm.backend()},
                                   {"overlap", config.dist.overlap},
                                   {"bucket_mb", config.dist.bucket_mb},
                                   {"preset", config.run.preset}};
    append_json_line(output.jsonl, simulation_record(result, simulation, options.simulation, launch));
  }
  return 0;
}

int bench_comm(const train::TrainConfig& config, bool with_layout, const dist::CommBenchOptions& options,
               const BenchOutput& output, dist::Session& session) {
  dist::Communicator& comm = session.comm();
  const std::string rank_table = dist::gather_rank_table(comm);
  auto rows = dist::run_size_sweep(comm, options);
  if (with_layout) {  // the gradient buckets of this preset's G and D
    train::Trainer trainer(config, train::open_configured_dataset(config), comm.device(), &comm);
    for (const auto& [name, reducer] : {std::pair<std::string, const dist::GradientReducer*>{"G", &trainer.G_reducer()},
                                        {"D", &trainer.D_reducer()}}) {
      auto layout = dist::run_bucket_layout(comm, reducer->bucket_numels(), options);
      for (auto& row : layout) row.label = name + " " + row.label;
      rows.insert(rows.end(), layout.begin(), layout.end());
    }
  }
  if (session.world().is_root()) {
    std::cout << rank_table << dist::format_comm_bench(rows, comm);
    if (!output.jsonl.empty()) append_json_line(output.jsonl, comm_bench_record(rows, comm));
  }
  for (const auto& row : rows) {
    if (!row.verified) return 1;
  }
  return 0;
}

// A power of two from 8 (the lowest block with resampling) to 4096.
const CLI::Validator kOpsResolution(
    [](const std::string& text) -> std::string {
      int64_t r = -1;
      if (!CLI::detail::lexical_cast(text, r)) r = -1;
      if (r >= 8 && r <= 4096 && (r & (r - 1)) == 0) return "";
      return "must be a power of two from 8 to 4096, not " + text;
    },
    "POWER_OF_TWO");

// 64 GiB: more than any GPU's memory for one allreduce buffer, so larger is a typo.
constexpr int64_t kMaxMessageBytes = int64_t{1} << 36;

}  // namespace

void BenchCommand::add_to(CLI::App& app) {
  config_options_.add_to(app);
  app.footer("Examples:\n"
             "  stylegan2_bench --config configs/bench-cpu-32.yaml\n"
             "  stylegan2_bench --config configs/config-f.yaml --run.device cuda --batch 32 --jsonl bench_.jsonl\n"
             "  mpirun -np 2 stylegan2_bench comm --min-bytes 16384 --max-bytes 67108864\n"
             "stylegan2_bench COMMAND --help lists a command's options (comm, simulate, ops, ...).");
  app.add_option("--warmup", bench_.warmup_steps, "Untimed steps first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", bench_.phase_repeats, "Timed calls per phase")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--cycles", bench_.step_cycles, "Timed cycles of lcm(reg intervals) steps")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--jsonl", output_.jsonl,
                 "Append the results to this file for scripts, one JSON object a line: one a run (rank 0); "
                 "stylegan2_bench ops: one a row of its tables");
  app.add_flag("--compute-alone", output_.compute_alone,
               "Every rank trains train.batch / ranks images a step at once with no communication; the times are "
               "the slowest rank's (the scaling model's compute term)");
  app.add_flag("--no-op-families", no_ops_, "Skip the per-op-family breakdown");
  app.add_flag("--device-kernels", bench_.device_kernels,
               "One more cycle under LibTorch's Kineto profiler: the device's time by kernel, and how busy it is, "
               "then each phase's kernels in one call of it (CUDA; on the CPU, ops by name, nested ones included)");
  app.add_flag("--reference-ops", bench_.reference_ops, "Use the reference ops instead of the hand-written kernels");

  comm_ = app.add_subcommand("comm", "Allreduce sweep over message sizes (and, with --config, the "
                                              "preset's gradient buckets), verified, with algbw and busbw");
  comm_->fallthrough();  // --config and the other training flags may follow "comm"
  comm_->add_option("--min-bytes", comm_options_.min_bytes, "Smallest message")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{4}, kMaxMessageBytes));
  comm_->add_option("--max-bytes", comm_options_.max_bytes, "Largest message")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{4}, kMaxMessageBytes));
  comm_->add_option("--step-factor", comm_options_.step_factor, "Size multiplier")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  comm_->add_option("--iters", comm_options_.iterations, "Timed calls per size")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  comm_->add_option("--warmup", comm_options_.warmup, "Untimed calls per size")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  simulate_ = app.add_subcommand(
      "simulate", "The training step's gradient allreduce over the preset's buckets, compute replaced by waits "
                  "(the simulated cluster of docs/scaling.md); with --jsonl and --compute-alone as the training bench");
  simulate_->fallthrough();
  simulate_->add_option("--phase-ms", simulate_options_.phase_ms, "Compute per call of Gmain,Greg,Dmain,Dreg (ms)")
      ->delimiter(',')
      ->required()
      ->check(CLI::Range(0.0, 1e7));
  simulate_->add_option("--byte-scale", simulate_options_.simulation.byte_scale,
                       "Parameters and buckets at 1/this of their bytes")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e6));
  simulate_->add_option("--forward-share", simulate_options_.simulation.forward_share,
                       "Share of a phase before its backward")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  simulate_->add_option("--sim-warmup", simulate_options_.warmup, "Untimed steps first")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  simulate_->add_option("--sim-cycles", simulate_options_.cycles, "Timed cycles of lcm(reg intervals) steps")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  ops_ = app.add_subcommand("ops", "upfirdn2d and bias_act at the preset's shapes at one resolution, both "
                                            "layouts: the CUDA kernels (specialised and generic) and the reference "
                                            "ops, against a device copy");
  ops_->fallthrough();
  ops_->add_option("--resolution", ops_options_.resolution, "Resolution whose shapes are timed")
      ->capture_default_str()
      ->check(kOpsResolution);
  ops_->add_option("--ops-batch", ops_options_.batch, "Batch of the timed tensors")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  ops_->add_option("--dtype", ops_options_.dtype, "auto (float16 on CUDA, float32 on the CPU), float16, bfloat16, float32")
      ->capture_default_str();
  ops_->add_option("--ops-repeats", ops_options_.repeats, "Calls per timing (best of three)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
}

int BenchCommand::run() {
  bench_.op_families = !no_ops_;
  init_logging();
  const auto config = config_options_.resolve();
  for (const std::string& input : {config_options_.config_file(), config.data.path}) {
    std::error_code error;
    SG2_CHECK(output_.jsonl.empty() || !std::filesystem::equivalent(output_.jsonl, input, error),
              "--jsonl '{}' is an input of the bench ({}); append the results to another file", output_.jsonl, input);
  }
  if (ops_->parsed()) {
    const std::string compute = apply_libtorch_settings(config, dist::World{});  // cuDNN benchmark, TF32, threads
    const OpsBenchResult result = run_ops_benchmark(config, ops_options_, compute);
    std::cout << result.text;
    if (!output_.jsonl.empty()) {
      for (const nlohmann::json& record : result.records) append_json_line(output_.jsonl, record);
    }
    return 0;
  }
  // As every multi-rank program: an error on one rank ends every rank, other options are refused.
  return run_session_on_every_rank("stylegan2_bench", config, false, [&](dist::Session& session) {
    if (simulate_->parsed()) return bench_simulated(config, simulate_options_, output_, session);
    SG2_CHECK(!output_.compute_alone || !comm_->parsed(), "--compute-alone times training steps, not the comm bench");
    if (comm_->parsed()) return bench_comm(config, !config_options_.config_file().empty(), comm_options_, output_, session);
    return bench_training(config, bench_, output_, session);
  });
}

}  // namespace sg2::cli
