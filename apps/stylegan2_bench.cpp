// stylegan2_bench: times each phase and a full training step of a preset.
//   stylegan2_bench --config configs/bench-cpu-32.yaml
#include "sg2/core/logging.h"
#include "sg2/nn/ops.h"
#include "sg2/train/benchmark.h"
#include "sg2/train/command_line.h"

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Benchmark StyleGAN2 training phases on a preset (img/s, s/kimg, peak memory, op families)."};
  sg2::train::ConfigOptions config_options;
  sg2::train::BenchOptions bench;
  config_options.add_to(app);
  app.add_option("--warmup", bench.warmup_steps, "Untimed steps first")->capture_default_str();
  app.add_option("--repeats", bench.phase_repeats, "Timed calls per phase")->capture_default_str();
  app.add_option("--cycles", bench.step_cycles, "Timed cycles of lcm(reg intervals) steps")->capture_default_str();
  bool no_ops = false, reference_ops = false;
  app.add_flag("--no-op-families", no_ops, "Skip the per-op-family breakdown");
  app.add_flag("--reference-ops", reference_ops, "Use the reference ops instead of the hand-written kernels");
  CLI11_PARSE(app, argc, argv);
  bench.op_families = !no_ops;
  sg2::nn::ops::set_reference_ops(reference_ops);
  return sg2::train::run_reporting_errors("stylegan2_bench", [&] {
    sg2::init_logging();
    const auto config = config_options.resolve();
    sg2::train::apply_thread_setting(config);
    sg2::train::Trainer trainer(config, sg2::train::open_configured_dataset(config),
                                sg2::train::resolve_device(config.run.device));
    std::cout << sg2::train::format_benchmark(sg2::train::run_benchmark(trainer, bench), trainer);
    return 0;
  });
}
