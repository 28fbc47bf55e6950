#include "sg2/train/phase_graphs.h"

#include "sg2/core/error.h"

namespace sg2::train {

namespace {

void copy_each(const std::vector<at::Tensor>& from, std::vector<at::Tensor>& to) {
  SG2_CHECK(from.size() == to.size(), "a step of {} rounds for a graph captured with {}", from.size(), to.size());
  for (size_t i = 0; i < from.size(); ++i) {
    if (!from[i].is_same(to[i])) to[i].copy_(from[i], /*non_blocking=*/true);
  }
}

}  // namespace

void copy_step_inputs(const StepInputs& from, StepInputs& to, size_t phase) {
  copy_each(from.real_img, to.real_img);
  copy_each(from.real_c, to.real_c);
  copy_each(from.gen_z.at(phase), to.gen_z.at(phase));
  copy_each(from.gen_c.at(phase), to.gen_c.at(phase));
}

PhaseGraphs::PhaseGraphs(const at::Device& device, size_t phases)
    : device_(device), eager_runs_(phases, 0), captured_(phases) {
  SG2_CHECK(device.is_cuda(), "run.cuda_graphs needs a CUDA device; this run trains on {}", device.str());
  pool_ = new_device_graph_pool(device);
}

bool PhaseGraphs::runs_eagerly(size_t phase) {
  if (eager_runs_.at(phase) >= kEagerRuns) return false;
  ++eager_runs_[phase];
  return true;
}

bool PhaseGraphs::captured(size_t phase) const { return captured_.at(phase).graph != nullptr; }

bool PhaseGraphs::all_captured() const {
  for (size_t phase = 0; phase < captured_.size(); ++phase) {
    if (!captured(phase)) return false;
  }
  return true;
}

void PhaseGraphs::capture(size_t phase, const StepInputs& inputs, const Rounds& rounds,
                          const std::vector<at::Generator>& generators, StatsCollector& stats,
                          const dist::GradientReducer& reducer) {
  Captured& c = captured_.at(phase);
  SG2_CHECK(c.graph == nullptr, "phase {} is captured already", phase);
  auto graph = std::make_unique<DeviceGraph>(device_);
  c.inputs = inputs;
  stats.start_recording();
  try {
    graph->capture([&] { rounds(c.inputs); }, generators, pool_);
  } catch (...) {
    stats.stop_recording();
    throw;
  }
  c.stats = stats.stop_recording();
  c.arrivals = reducer.arrivals();
  c.graph = std::move(graph);
}

void PhaseGraphs::replay(size_t phase, const StepInputs& inputs, StatsCollector& stats,
                         dist::GradientReducer& reducer) {
  Captured& c = captured_.at(phase);
  SG2_CHECK(c.graph != nullptr, "phase {} has no graph to replay", phase);
  copy_step_inputs(inputs, c.inputs, phase);
  reducer.prepare_for_replayed_backward(c.arrivals);
  c.graph->replay();
  // Read before the next graph runs: the graphs share one pool.
  for (const auto& [name, moments] : c.stats) stats.add_moments(name, moments);
}

}  // namespace sg2::train
