#include "sg2/bench/benchmark.h"

#include "sg2/core/system.h"
#include "sg2/core/timer.h"
#include "sg2/device/cuda_device.h"
#include "sg2/bench/kernel_profile.h"
#include "sg2/bench/op_profile.h"
#include "sg2/ops/compute_settings.h"

#include <ATen/Parallel.h>
#include <fmt/ranges.h>
#include <torch/cuda.h>

#include <numeric>
#include <sstream>
#include <tuple>

namespace sg2::bench {

using namespace train;  // the command layer drives the training library

namespace {

void synchronize(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

CallSeconds time_host_and_device(const at::Device& device, const std::function<void()>& call) {
  synchronize(device);
  Stopwatch watch;
  call();
  CallSeconds seconds;
  seconds.host = watch.seconds();
  synchronize(device);
  seconds.total = watch.seconds();
  return seconds;
}

double time_call(const at::Device& device, const std::function<void()>& call) {
  return time_host_and_device(device, call).total;
}

namespace {

// `steps` whole training steps, the device synchronized before and after; adds the time the steps
// waited for the loader's batches to `data_wait` where given.
CallSeconds time_steps(Trainer& trainer, int64_t steps, double* data_wait = nullptr) {
  return time_host_and_device(trainer.device(), [&] {
    for (int64_t s = 0; s < steps; ++s) {
      trainer.step();
      if (data_wait) *data_wait += trainer.last_data_wait_seconds();
    }
  });
}

int64_t steps_per_cycle(const Trainer& trainer) {
  int64_t cycle = 1;
  for (const auto& phase : trainer.phases()) cycle = std::lcm(cycle, phase.interval);
  return cycle;
}

// A name cut to `width` characters in the middle (GPU kernels' template names run to hundreds; the
// kernel's name is at the front, a custom autograd Function's at the end).
std::string shortened(const std::string& name, size_t width = 96) {
  if (name.size() <= width) return name;
  const size_t head = (width - 3) / 2, tail = width - 3 - head;
  return name.substr(0, head) + "..." + name.substr(name.size() - tail);
}

// "  name   12.3 ms  45.6 %" rows, largest first.
std::string format_top(const std::map<std::string, double>& seconds, const std::string& title, size_t limit,
                       size_t width = 96) {
  if (seconds.empty()) return "";
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [name, s] : seconds) {
    rows.emplace_back(s, name);
    total += s;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string out = title + "\n";
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    out += fmt::format("  {:<48} {:>9.1f} ms {:>6.1f} %\n", shortened(rows[i].second, width), rows[i].first * 1e3,
                       100.0 * rows[i].first / std::max(total, 1e-12));
  }
  return out;
}

// The profiled step's GPU time by kind (is_matrix_kernel): what a GPU of less memory bandwidth and
// the same arithmetic could slow (gpu_vs_reference.sh estimates an H100 SXM's step from it), and where
// it goes.
std::string format_kernel_kinds(const KernelKinds& kinds) {
  if (kinds.matrix_seconds + kinds.other_seconds <= 0) return "";
  return fmt::format("GPU time per step by kind: convolutions and matrix products {:.1f} ms, other kernels {:.1f} ms "
                     "(element-wise, reductions, FIR, copies: bound by memory or latency)\n",
                     kinds.matrix_seconds * 1e3, kinds.other_seconds * 1e3) +
         format_top(kinds.other, "most expensive other kernels per step:", 30);
}

// "  name   1234" rows, most calls first.
std::string format_counts(const std::map<std::string, int64_t>& calls, size_t limit) {
  std::vector<std::pair<int64_t, std::string>> rows;
  for (const auto& [name, count] : calls) rows.emplace_back(count, name);
  std::sort(rows.rbegin(), rows.rend());
  std::string out;
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    out += fmt::format("  {:<48} {:>7}\n", shortened(rows[i].second), rows[i].first);
  }
  return out;
}

// Per phase: how many ops one call dispatches, the most frequent, and the top-level ops behind them.
std::string format_op_calls(const BenchResult& r) {
  std::string out;
  for (const auto& phase : r.phases) {
    const auto calls = r.phase_op_calls.find(phase.name);
    const auto under = r.phase_calls_by_top_level_op.find(phase.name);
    if (calls == r.phase_op_calls.end() || under == r.phase_calls_by_top_level_op.end()) continue;
    int64_t total = 0;
    for (const auto& [name, count] : calls->second) total += count;
    out += fmt::format("ops one {} call dispatches (nested ones included): {}; the most frequent:\n", phase.name,
                       total) +
           format_counts(calls->second, 10) + "the top-level ops and autograd nodes that dispatch the most of them:\n" +
           format_counts(under->second, 10);
  }
  return out;
}

// One more cycle of steps under the Kineto profiler, then one call of each phase under its own (which
// phase runs a kernel: the cycle's table cannot say). A profiler that fails (no CUPTI, say) costs
// its tables only, not the timings already taken.
void profile_device_kernels(Trainer& trainer, int64_t cycle, BenchResult& result) {
  try {
    KernelProfile profile(trainer.device());
    const double wall = time_steps(trainer, cycle).total;
    const DeviceTimes times = profile.stop();
    for (const auto& [kernel, s] : times.seconds) result.kernel_seconds[kernel] = s / cycle;
    result.kernel_busy_seconds = times.busy_seconds / cycle;
    result.kernel_wall_seconds = wall / cycle;
    for (size_t i = 0; i < trainer.phases().size(); ++i) {
      const StepInputs inputs = trainer.prepare_inputs();
      KernelProfile phase_profile(trainer.device(), /*with_shapes=*/true);
      time_call(trainer.device(), [&] { trainer.run_phase(i, inputs); });
      result.phase_device_times[trainer.phases()[i].name] = phase_profile.stop();
    }
  } catch (const std::exception& e) {
    result.kernel_profile_error = e.what();
  }
}

// The ops one call of each phase dispatches (nested ones included).
void count_phase_ops(Trainer& trainer, BenchResult& result) {
  for (size_t i = 0; i < trainer.phases().size(); ++i) {
    const StepInputs inputs = trainer.prepare_inputs();
    OpProfile profile(/*count_calls=*/true);
    trainer.run_phase(i, inputs);
    result.phase_op_calls[trainer.phases()[i].name] = profile.calls_by_op();
    result.phase_calls_by_top_level_op[trainer.phases()[i].name] = profile.calls_by_top_level_op();
  }
}

}  // namespace

BenchResult run_benchmark(Trainer& trainer, const BenchOptions& options) {
  BenchResult result;
  if (options.reference_ops) {
    trainer.set_compute(ops::with_kernel(train::compute_settings_of(trainer.config()), ops::Kernel::Reference));
  }
  const at::Device device = trainer.device();
  result.batch = trainer.config().train.batch;
  // With run.cuda_graphs the replays allocate nothing (the graphs' pool holds their memory), so the
  // peak reported is the whole run's, phases running as themselves beside the pool included.
  const bool graphs = trainer.config().run.cuda_graphs;
  reset_device_peak_memory(device);
  for (int i = 0; i < options.warmup_steps; ++i) trainer.step();
  // run.cuda_graphs: every phase runs from its graph before anything is timed.
  for (int i = 0; i <= PhaseGraphs::kEagerRuns && !trainer.all_phases_captured(); ++i) {
    for (size_t phase = 0; phase < trainer.phases().size(); ++phase) trainer.run_phase(phase, trainer.prepare_inputs());
  }

  // Each phase on its own, on fresh inputs.
  for (size_t i = 0; i < trainer.phases().size(); ++i) {
    PhaseTiming timing{trainer.phases()[i].name, trainer.phases()[i].interval};
    for (int r = 0; r < options.phase_repeats; ++r) {
      const StepInputs inputs = trainer.prepare_inputs();
      const CallSeconds call = time_host_and_device(device, [&] { trainer.run_phase(i, inputs); });
      timing.seconds += call.total / options.phase_repeats;
      timing.host_seconds += call.host / options.phase_repeats;
    }
    result.phases.push_back(timing);
  }

  // Whole steps, regularization at its real frequency; then, separately (the profilers' callbacks
  // cost time), one more cycle split by op family, and one under the device profiler.
  trainer.stats().finish();
  if (!graphs) reset_device_peak_memory(device);
  const int64_t cycle = steps_per_cycle(trainer);
  result.timed_steps = cycle * options.step_cycles;
  trainer.progress().batch_idx -= trainer.progress().batch_idx % cycle;
  trainer.prime_data();  // the step back restarts the loader: the timed steps find its queue full, as a run does
  trainer.take_reducer_times();  // drop the warm-up's and the phases' allreduces
  trainer.take_bucket_launch_fractions();
  double data_wait = 0;
  const CallSeconds seconds = time_steps(trainer, result.timed_steps, &data_wait);
  const auto steps = static_cast<double>(result.timed_steps);
  result.step_seconds = seconds.total / steps;
  result.step_host_seconds = seconds.host / steps;
  result.step_data_wait_seconds = data_wait / steps;
  result.step_allreduce = trainer.take_reducer_times();
  std::tie(result.G_bucket_launch, result.D_bucket_launch) = trainer.take_bucket_launch_fractions();
  result.G_bucket_bytes = trainer.G_reducer().bucket_bytes();
  result.D_bucket_bytes = trainer.D_reducer().bucket_bytes();
  result.step_allreduce.busy_seconds /= steps;
  result.step_allreduce.exposed_seconds /= steps;
  if (options.op_families) {
    OpProfile profile;
    time_steps(trainer, cycle);
    for (const auto& [family, s] : profile.seconds_by_family()) result.family_seconds[family] = s / cycle;
    for (const auto& [op, s] : profile.seconds_by_op()) result.op_seconds[op] = s / cycle;
  }
  if (options.op_families || options.device_kernels) count_phase_ops(trainer, result);
  if (options.device_kernels) profile_device_kernels(trainer, cycle, result);
  result.peak_rss_gib = peak_rss_gib();
  result.peak_device_gib = device_peak_memory_gib(device);
  return result;
}

std::string format_benchmark(const BenchResult& r, const Trainer& trainer) {
  std::ostringstream out;
  const auto& c = trainer.config();
  out << fmt::format("preset {}  resolution {}  batch {}  device {}  threads {}\n", c.run.preset,
                     trainer.dataset().resolution(), r.batch, trainer.device().str(), at::get_num_threads());
  // What ran, not what was asked: mixed_precision auto runs float32 off CUDA.
  out << fmt::format("# precision: {}; TF32 {}\n", nn::describe_precision(trainer.G().options, trainer.D().options),
                     c.run.allow_tf32 ? "on" : "off");
  // "host ms": until the host had issued the call (time_host_and_device says how to read it).
  out << fmt::format("{:<10} {:>10} {:>10} {:>10} {:>10}\n", "phase", "ms/call", "img/s", "every", "host ms");
  for (const auto& p : r.phases) {
    out << fmt::format("{:<10} {:>10.1f} {:>10.2f} {:>10} {:>10.1f}\n", p.name, p.seconds * 1e3, r.batch / p.seconds,
                       fmt::format("{} step{}", p.interval, p.interval > 1 ? "s" : ""), p.host_seconds * 1e3);
  }
  const double img_per_s = static_cast<double>(r.batch) / r.step_seconds;
  out << fmt::format("step       {:>10.1f} {:>10.2f}   (mean of {} steps, regularization amortised; the host issued "
                     "them in {:.1f} ms a step, {:.2f} ms of it waiting for data)\n",
                     r.step_seconds * 1e3, img_per_s, r.timed_steps, r.step_host_seconds * 1e3,
                     r.step_data_wait_seconds * 1e3);
  out << fmt::format("throughput {:.2f} img/s, {:.2f} s/kimg; peak RSS {:.2f} GiB, peak device memory {:.2f} GiB\n",
                     img_per_s, 1000.0 / img_per_s, r.peak_rss_gib, r.peak_device_gib);
  for (const auto& [name, fractions, bytes] : {std::tuple{"G", &r.G_bucket_launch, &r.G_bucket_bytes},
                                                std::tuple{"D", &r.D_bucket_launch, &r.D_bucket_bytes}}) {
    out << fmt::format("# {} buckets launched at {:.3f} of their pass (prepare to finish)\n", name,
                       fmt::join(*fractions, " "));
    out << fmt::format("# {} bucket bytes {} (launch order)\n", name, fmt::join(*bytes, " "));
  }
  out << format_top(r.family_seconds,
                    "time per step by op family (top-level ops; autograd nodes include their kernels):",
                    r.family_seconds.size());
  out << format_top(r.op_seconds, "most expensive ops per step:", 12);
  out << format_op_calls(r);
  if (!r.kernel_profile_error.empty()) out << "device kernel profile failed: " << r.kernel_profile_error << "\n";
  if (r.kernel_busy_seconds > 0) {
    out << fmt::format("device busy {:.1f} ms of a {:.1f} ms step under the profiler ({:.1f}%; the rest waits "
                       "for the host)\n",
                       r.kernel_busy_seconds * 1e3, r.kernel_wall_seconds * 1e3,
                       100 * r.kernel_busy_seconds / std::max(r.kernel_wall_seconds, 1e-12));
  }
  out << format_top(r.kernel_seconds,
                    trainer.device().is_cuda() ? "most expensive GPU kernels per step (GPU time):"
                                               : "most expensive ops per step under the profiler (nested ones included):",
                    20);
  if (trainer.device().is_cuda()) out << format_kernel_kinds(split_by_kind(r.kernel_seconds));
  for (const auto& phase : r.phases) {
    const auto it = r.phase_device_times.find(phase.name);
    if (it == r.phase_device_times.end()) continue;
    out << format_top(it->second.seconds,
                      fmt::format("most expensive {} in one {} call:",
                                  trainer.device().is_cuda() ? "GPU kernels" : "ops (nested ones included)", phase.name),
                      8)
        << format_top(it->second.seconds_by_launching_op,
                      "the same by kernel <- the op that launched it and its input shapes:", 12, 200);
  }
  return out.str();
}

}  // namespace sg2::bench
