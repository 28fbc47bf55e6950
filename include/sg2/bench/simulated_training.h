#pragma once
// The communication of data-parallel training with the compute replaced by waits (stylegan2_bench
// simulate; docs/scaling.md): the real GradientReducer over parameters named and ordered as a preset's
// G and D, each 1/byte_scale of its size (so are the buckets: the same parameters fall into the same
// buckets), and per phase a forward wait, then a backward that delivers each parameter's gradient at
// the time its layer's share of the phase's backward has passed (a layer's share: its parameters'
// multiply-adds, positions x weights). Phases, intervals and the allreduce's placement are the
// trainer's; only the compute is a wait, so many ranks share a few cores without their compute
// slowing the collectives.

#include "sg2/core/named_tensors.h"
#include "sg2/core/timer.h"
#include "sg2/distributed/reducer.h"
#include "sg2/train/config.h"

#include <nlohmann/json.hpp>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sg2::bench {

struct SimulationOptions {
  double byte_scale = 50;  // parameters and buckets at 1/byte_scale of their bytes
  // Per call of Gmain, Greg, Dmain, Dreg: the compute the waits stand in for.
  std::array<double, 4> phase_seconds{0.1, 0.1, 0.1, 0.1};
  double forward_share = 1.0 / 3;  // of a phase, before its backward starts
};

// One network's stand-in: its parameters (scaled) in registration order and when, in a backward,
// each one's gradient arrives.
struct SimulatedNetwork {
  std::string name;                   // "G" or "D"
  NamedTensors parameters;            // [max(1, numel / byte_scale)] float32 each, registration order
  std::vector<size_t> arrival_order;  // indices into parameters, first arrival first
  std::vector<double> arrival_share;  // per arrival: the share of the backward passed when it arrives
};

// G's or D's parameters as the preset's networks name and shape them, scaled, with their arrival
// schedule (G's gradients from the highest resolution down, mapping last; D's from the lowest up).
SimulatedNetwork simulated_network(const std::string& name, const NamedTensors& real_parameters, double byte_scale);

struct SimulatedPhase {
  std::string name;  // Gmain, Greg, Dmain, Dreg
  int network;       // 0: G, 1: D
  int64_t interval;
  double seconds;    // per call
};

class SimulatedTraining {
 public:
  SimulatedTraining(const train::TrainConfig& config, dist::Communicator& comm, const SimulationOptions& options);
  // Every phase due at this step, as Trainer::step; `timed` (if any) gets each phase's index and seconds.
  void step(const std::function<void(size_t, double)>& timed = {});
  void run_phase(size_t index);

  const std::vector<SimulatedPhase>& phases() const { return phases_; }
  dist::GradientReducer& reducer(int network) { return *reducers_.at(network); }
  const SimulatedNetwork& network(int index) const { return networks_.at(index); }
  // When each of a network's buckets is due in its pass, as a fraction of the phase (forward, then the
  // backward's arrivals): the schedule the waits follow, for the model to predict from.
  std::vector<double> scheduled_ready_fractions(int network) const;
  int64_t batch_idx() const { return batch_idx_; }

 private:
  std::vector<SimulatedNetwork> networks_;
  std::vector<std::unique_ptr<dist::GradientReducer>> reducers_;
  std::vector<SimulatedPhase> phases_;
  SimulationOptions options_;
  int world_size_;
  int64_t batch_idx_ = 0;
};

struct SimulationResult {
  int64_t timed_steps = 0;
  double step_seconds = 0;                   // per step, regularization amortised
  double cpu_seconds = 0;                    // this process's CPU time over the timed steps, per step
  std::vector<double> phase_seconds;         // per call of each phase (phases()), measured
  dist::ReducerTimes allreduce;              // per step; bytes: per rank, both networks
  std::array<std::vector<int64_t>, 2> bucket_bytes;     // G's and D's, launch order
  std::array<std::vector<double>, 2> launch_fraction;   // measured (GradientReducer::take_launch_fractions)
  std::array<std::vector<double>, 2> scheduled_ready;   // scheduled_ready_fractions
};

// `warmup_steps` untimed steps (the first learns the bucket order), then `cycles` x lcm(intervals)
// timed ones.
SimulationResult run_simulation(SimulatedTraining& simulation, int warmup_steps, int cycles);

// The record of stylegan2_bench simulate --jsonl: {"kind": "simulated", "mode", "ranks", "nodes", "backend",
// "overlap", "byte_scale", "forward_share", "step_s", "ranks_cpu_s" (every rank's CPU time a step, summed), "phases": [{"name", "every", "s", "measured_s"}],
// "allreduce": {"busy_s", "exposed_s", "bytes"}, "buckets": {"G": {"bytes", "launch_fraction",
// "scheduled_ready"}, "D": ...}} (bytes as sent: scaled).
nlohmann::json simulation_record(const SimulationResult& result, const SimulatedTraining& simulation,
                                 const SimulationOptions& options, const nlohmann::json& launch);
std::string format_simulation(const SimulationResult& result, const SimulatedTraining& simulation);

}  // namespace sg2::bench
