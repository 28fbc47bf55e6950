#pragma once
// stylegan2_bench: times each training phase and whole steps of a preset on the real trainer
// (img/s, s/kimg, peak memory), and where the time goes by op family. A step is Gmain + Dmain +
// Greg/G_reg_interval + Dreg/D_reg_interval, measured over whole multiples of the intervals.

#include "sg2/bench/kernel_profile.h"
#include "sg2/train/trainer.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sg2::bench {

using train::Trainer;

struct BenchOptions {
  int warmup_steps = 2;
  int phase_repeats = 3;   // timed calls per phase
  int step_cycles = 1;     // timed cycles of lcm(reg intervals) steps
  bool op_families = true;
  bool device_kernels = false;  // one more cycle under the Kineto profiler, then each phase once: what the device ran
  bool reference_ops = false;   // the trainer's networks run the reference ops (ops::Kernel::Reference)
};

struct PhaseTiming {
  std::string name;
  int64_t interval = 1;
  double seconds = 0;       // per call
  double host_seconds = 0;  // per call, until the host had issued it (on a GPU: its launches, not their work)
};

struct BenchResult {
  std::vector<PhaseTiming> phases;
  int64_t batch = 0;
  int64_t timed_steps = 0;
  double step_seconds = 0;  // per step, regularization amortised
  double step_host_seconds = 0;  // per step, until the host had issued the timed steps
  double step_data_wait_seconds = 0;  // per step, the training thread waiting for the loader's batch
  double peak_rss_gib = 0;
  double peak_device_gib = 0;
  dist::ReducerTimes step_allreduce;  // per timed step (busy, exposed); bytes: gradients per rank
  std::vector<double> G_bucket_launch, D_bucket_launch;  // fractions of the pass (take_launch_fractions)
  std::vector<int64_t> G_bucket_bytes, D_bucket_bytes;   // the same buckets' sizes, in launch order
  std::map<std::string, double> family_seconds;  // per step
  std::map<std::string, double> op_seconds;      // per step
  // The host's work in one call of each phase (op_families or device_kernels), which bounds a GPU
  // step where the kernels are short: phase name -> op name -> calls, nested ops included, and the
  // same calls by the top-level op or autograd node they ran in.
  std::map<std::string, std::map<std::string, int64_t>> phase_op_calls, phase_calls_by_top_level_op;
  std::map<std::string, double> kernel_seconds;  // per step, device time (device_kernels)
  double kernel_busy_seconds = 0;                // per step, CUDA kernels' sum (device_kernels)
  double kernel_wall_seconds = 0;                // per step, the profiled cycle's wall time
  std::string kernel_profile_error;              // why the profile failed (the timings stand)
  // phase name -> what the device ran in one call of that phase, by kernel and (CUDA) by the op
  // that launched it (device_kernels)
  std::map<std::string, DeviceTimes> phase_device_times;
};

struct CallSeconds {
  double host = 0;   // until the call returned: on a GPU, the host's launches
  double total = 0;  // until the device had finished its work too
};

// How long a call takes, the device synchronized before and after. On a GPU, host well under total
// means the device bounds the call; host near total, that the launches bound it or that the driver's
// queue of launches (about a thousand) was full, which the Kineto profile's busy share tells apart.
CallSeconds time_host_and_device(const at::Device& device, const std::function<void()>& call);
// The same call's total seconds.
double time_call(const at::Device& device, const std::function<void()>& call);

BenchResult run_benchmark(Trainer& trainer, const BenchOptions& options);
std::string format_benchmark(const BenchResult& result, const Trainer& trainer);

}  // namespace sg2::bench
