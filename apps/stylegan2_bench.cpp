// stylegan2_bench: times each phase and a full training step of a preset, on one process or under
// mpirun / stylegan2_launch (the step then includes the gradient allreduce); `comm` benchmarks the
// communicator like nccl-tests.
//   stylegan2_bench --config configs/bench-cpu-32.yaml
//   mpirun -np 2 stylegan2_bench comm [--config configs/bench-cpu-32.yaml]
//   mpirun -np 4 stylegan2_bench --config configs/bench-cpu-32.yaml --compute-alone --jsonl runs.jsonl
#include "sg2/cli/bench_command.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

int main(int argc, char** argv) {
  CLI::App app{"Benchmark StyleGAN2 training phases on a preset (img/s, s/kimg, peak memory, op families)."};
  sg2::cli::BenchCommand command;
  command.add_to(app);
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_bench", [&] { return command.run(); }, sg2::train::message_of);
}
