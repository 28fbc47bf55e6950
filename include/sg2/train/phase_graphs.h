#pragma once
// run.cuda_graphs: the training phases (Gmain, Greg, Dmain, Dreg) in CUDA graphs. A phase runs as
// itself for its first kEagerRuns calls, which set up what a capture cannot (cuDNN's benchmark, the
// gradient reducer's bucket order, the allocator's blocks). Its
// next call captures the phase's rounds, forward and backward with the reducer's hooks writing
// their buckets, and from then on each call copies the step's inputs into the captured ones and
// replays the graph: the host issues one launch instead of a few thousand ops. The optimizer's
// step, the allreduce of the buckets (finish) and everything between phases still run as
// themselves. A replay draws the numbers the phase would have drawn (its generators are
// registered with the graph), so the training is the one without graphs.

#include "sg2/device/device_graph.h"
#include "sg2/distributed/reducer.h"
#include "sg2/train/stats.h"

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <vector>

namespace sg2::train {

// The inputs of one step on this process, split into accumulation rounds.
struct StepInputs {
  std::vector<at::Tensor> real_img;                 // [round] -> [b, C, R, R] float in [-1, 1]
  std::vector<at::Tensor> real_c;                   // [round] -> [b, c_dim]
  std::vector<std::vector<at::Tensor>> gen_z;       // [phase][round] -> [b, z_dim]
  std::vector<std::vector<at::Tensor>> gen_c;       // [phase][round] -> [b, c_dim]
};

class PhaseGraphs {
 public:
  static constexpr int kEagerRuns = 2;

  PhaseGraphs(const at::Device& device, size_t phases);

  // Counts this call of `phase`; true while it is one of its first kEagerRuns.
  bool runs_eagerly(size_t phase);
  bool captured(size_t phase) const;
  bool all_captured() const;

  // Captures `rounds` run over `inputs` (which become the graph's inputs); the stats the rounds
  // report and the gradients the final backward delivers are noted for the replays. Nothing runs.
  using Rounds = std::function<void(const StepInputs&)>;
  void capture(size_t phase, const StepInputs& inputs, const Rounds& rounds, const std::vector<at::Generator>& generators,
               StatsCollector& stats, const dist::GradientReducer& reducer);
  // Runs the captured phase on `inputs`: their values copied into the graph's, its stats added, and
  // `reducer` left as after the final backward (ready for finish()).
  void replay(size_t phase, const StepInputs& inputs, StatsCollector& stats, dist::GradientReducer& reducer);

 private:
  struct Captured {
    std::unique_ptr<DeviceGraph> graph;
    StepInputs inputs;
    StatsCollector::Recorded stats;
    std::vector<char> arrivals;
  };
  at::Device device_;
  DeviceGraphPool pool_;
  std::vector<int> eager_runs_;
  std::vector<Captured> captured_;
};

// Copies the values of `from` into `to` (the same shapes): the real images and labels of every
// round, and phase `phase`'s latents and labels.
void copy_step_inputs(const StepInputs& from, StepInputs& to, size_t phase);

}  // namespace sg2::train
