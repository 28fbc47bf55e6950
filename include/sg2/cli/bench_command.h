#pragma once
// stylegan2_bench: times each phase and a full training step of a preset, on one process or under
// mpirun / stylegan2_launch (the step then includes the gradient allreduce); `comm` benchmarks the
// communicator like nccl-tests, `simulate` the step's allreduce with compute replaced by waits, `ops`
// the kernels at a preset's shapes (docs/benchmarks.md). The measuring is the bench module's; this
// is its command line.

#include "sg2/bench/benchmark.h"
#include "sg2/bench/ops_benchmark.h"
#include "sg2/bench/simulated_training.h"
#include "sg2/cli/command_line.h"
#include "sg2/distributed/comm_benchmark.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sg2::cli {

// Where results go besides stdout: `--jsonl FILE`, and how the ranks run (`--compute-alone`).
struct BenchOutput {
  std::string jsonl;
  bool compute_alone = false;
};

// simulate: the trainer's gradient allreduce over the preset's buckets (scaled), compute replaced by waits.
struct SimulateOptions {
  bench::SimulationOptions simulation;
  std::vector<double> phase_ms;  // Gmain, Greg, Dmain, Dreg
  int warmup = 2;
  int cycles = 1;
};

class BenchCommand {
 public:
  void add_to(CLI::App& app);  // the training bench's options and the comm, simulate and ops commands
  int run();

 private:
  ConfigOptions config_options_;
  bench::BenchOptions bench_;
  BenchOutput output_;
  bool no_ops_ = false;
  dist::CommBenchOptions comm_options_;
  SimulateOptions simulate_options_;
  bench::OpsBenchOptions ops_options_;
  CLI::App* comm_ = nullptr;
  CLI::App* simulate_ = nullptr;
  CLI::App* ops_ = nullptr;
};

}  // namespace sg2::cli
