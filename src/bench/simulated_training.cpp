#include "sg2/bench/simulated_training.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/nn/state_dict.h"
#include "sg2/train/run_record.h"
#include "sg2/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <regex>
#include <thread>
#include <unordered_map>

namespace sg2::bench {

namespace {

using Clock = std::chrono::steady_clock;

// The block resolution in a parameter's name ("synthesis.b64.conv0.weight", "b64.skip.weight": 64);
// 0 for the mapping network's.
int64_t block_resolution(const std::string& name) {
  static const std::regex block(R"((^|\.)b(\d+)\.)");
  std::smatch match;
  return std::regex_search(name, match, block) ? std::stoll(match[2]) : 0;
}

// The multiply-adds a parameter stands for per image, up to a constant: its elements times the
// positions it is applied at (one for the fully connected layers: mapping, affine, D's fc and out).
double backward_work(const std::string& name, int64_t numel) {
  const bool fully_connected = name.rfind("mapping.", 0) == 0 || name.find("affine") != std::string::npos ||
                               name.find(".fc.") != std::string::npos || name.find(".out.") != std::string::npos;
  const auto res = static_cast<double>(block_resolution(name));
  return static_cast<double>(numel) * (fully_connected || res == 0 ? 1.0 : res * res);
}

void sleep_until(Clock::time_point deadline) {
  if (Clock::now() < deadline) std::this_thread::sleep_until(deadline);
}

}  // namespace

SimulatedNetwork simulated_network(const std::string& name, const NamedTensors& real_parameters, double byte_scale) {
  SG2_CHECK(byte_scale >= 1, "--byte-scale {}: must be at least 1", byte_scale);
  SimulatedNetwork net{name, {}, {}, {}};
  std::vector<double> work;
  for (const auto& [key, tensor] : real_parameters) {
    const auto numel = std::max<int64_t>(1, std::llround(static_cast<double>(tensor.numel()) / byte_scale));
    net.parameters.emplace_back(key, at::zeros({numel}, at::kFloat).requires_grad_(true));
    work.push_back(backward_work(key, tensor.numel()));
  }
  // Backward reaches the layers nearest the loss first: G's image end (its highest resolution), D's
  // head (its lowest); within a block, the later registered first.
  const bool generator = name == "G";
  const auto key = [&](size_t i) {
    const int64_t res = block_resolution(net.parameters[i].first);
    return generator ? -res : res;
  };
  net.arrival_order.resize(net.parameters.size());
  std::iota(net.arrival_order.rbegin(), net.arrival_order.rend(), size_t{0});
  std::stable_sort(net.arrival_order.begin(), net.arrival_order.end(),
                   [&](size_t a, size_t b) { return key(a) < key(b); });
  const double total = std::accumulate(work.begin(), work.end(), 0.0);
  double passed = 0;
  for (size_t index : net.arrival_order) {
    passed += work[index];
    net.arrival_share.push_back(passed / total);
  }
  return net;
}

SimulatedTraining::SimulatedTraining(const train::TrainConfig& config, dist::Communicator& comm,
                                     const SimulationOptions& options)
    : options_(options), world_size_(comm.size()) {
  SG2_CHECK(options.forward_share >= 0 && options.forward_share < 1, "--forward-share {}: expected 0 <= share < 1",
            options.forward_share);
  {  // the preset's networks, for their parameters' names and sizes only
    const auto dataset = train::open_configured_dataset(config);
    const at::Device cpu(at::kCPU);
    const nn::Generator G(train::generator_options(config, *dataset, cpu));
    const nn::Discriminator D(train::discriminator_options(config, *dataset, cpu));
    networks_.push_back(simulated_network("G", nn::named_parameters(G), options.byte_scale));
    networks_.push_back(simulated_network("D", nn::named_parameters(D), options.byte_scale));
  }
  dist::ReducerOptions reducer;
  reducer.bucket_bytes = std::max<int64_t>(4, std::llround(config.dist.bucket_mb * (1 << 20) / options.byte_scale));
  reducer.overlap = config.dist.overlap;
  for (const auto& net : networks_) reducers_.push_back(std::make_unique<dist::GradientReducer>(comm, net.parameters, reducer));
  const auto& s = options.phase_seconds;
  phases_.push_back({"Gmain", 0, 1, s[0]});
  if (config.loss.pl_weight != 0) phases_.push_back({"Greg", 0, config.optim.G_reg_interval, s[1]});
  phases_.push_back({"Dmain", 1, 1, s[2]});
  if (config.loss.r1_gamma != 0) phases_.push_back({"Dreg", 1, config.optim.D_reg_interval, s[3]});
}

void SimulatedTraining::step(const std::function<void(size_t, double)>& timed) {
  for (size_t i = 0; i < phases_.size(); ++i) {
    if (batch_idx_ % phases_[i].interval != 0) continue;
    const Stopwatch watch;
    run_phase(i);
    if (timed) timed(i, watch.seconds());
  }
  ++batch_idx_;
}

// The forward wait, then a backward through a chain of one link a parameter, last arrival first: the
// gradient of link i reaches parameter i's branch (its hook, the reducer's) once link i's wait is over,
// each wait ending at its absolute deadline (no drift from many short sleeps).
void SimulatedTraining::run_phase(size_t index) {
  const SimulatedPhase& phase = phases_.at(index);
  SimulatedNetwork& net = networks_.at(phase.network);
  dist::GradientReducer& reducer = *reducers_.at(phase.network);
  reducer.prepare_for_final_backward();
  const Clock::time_point start = Clock::now();
  const auto at_seconds = [&](double s) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const double forward = phase.seconds * options_.forward_share;
  const double backward = phase.seconds - forward;
  sleep_until(at_seconds(forward));
  at::Tensor chain = at::zeros({}, at::kFloat);
  for (size_t k = net.arrival_order.size(); k-- > 0;) {  // built from the last arrival to the first
    const at::Tensor& p = net.parameters[net.arrival_order[k]].second;
    chain = chain + (p * 0).sum();
    const Clock::time_point due = at_seconds(forward + backward * net.arrival_share[k]);
    chain.register_hook([due](const at::Tensor& grad) {
      sleep_until(due);
      return grad;
    });
  }
  chain.backward();
  sleep_until(at_seconds(phase.seconds));  // what backward has left after the last gradient
  reducer.finish(world_size_);
  for (auto& [name, p] : net.parameters) p.mutable_grad().reset();
}

std::vector<double> SimulatedTraining::scheduled_ready_fractions(int network) const {
  const SimulatedNetwork& net = networks_.at(network);
  std::unordered_map<std::string, double> arrival;
  for (size_t k = 0; k < net.arrival_order.size(); ++k) {
    arrival[net.parameters[net.arrival_order[k]].first] = net.arrival_share[k];
  }
  const double forward = options_.forward_share;
  std::vector<double> ready;
  for (const auto& names : reducers_.at(network)->bucket_parameter_names()) {
    double last = 0;
    for (const auto& name : names) last = std::max(last, arrival.at(name));
    ready.push_back(forward + (1 - forward) * last);
  }
  return ready;
}

SimulationResult run_simulation(SimulatedTraining& simulation, int warmup_steps, int cycles) {
  SG2_CHECK(warmup_steps >= 1, "simulate: --warmup {}: at least one step learns the bucket order", warmup_steps);
  for (int i = 0; i < warmup_steps; ++i) simulation.step();
  int64_t cycle = 1;
  for (const auto& phase : simulation.phases()) cycle = std::lcm(cycle, phase.interval);
  while (simulation.batch_idx() % cycle != 0) simulation.step();
  for (int net = 0; net < 2; ++net) {
    simulation.reducer(net).take_times();
    simulation.reducer(net).take_launch_fractions();
  }
  SimulationResult result;
  result.timed_steps = cycle * cycles;
  std::vector<double> phase_total(simulation.phases().size(), 0.0);
  std::vector<int64_t> phase_calls(simulation.phases().size(), 0);
  const Stopwatch watch;
  const double cpu_before = process_cpu_seconds();
  for (int64_t s = 0; s < result.timed_steps; ++s) {
    simulation.step([&](size_t phase, double seconds) {
      phase_total[phase] += seconds;
      ++phase_calls[phase];
    });
  }
  const auto steps = static_cast<double>(result.timed_steps);
  result.step_seconds = watch.seconds() / steps;
  result.cpu_seconds = (process_cpu_seconds() - cpu_before) / steps;
  for (size_t i = 0; i < phase_total.size(); ++i) result.phase_seconds.push_back(phase_total[i] / phase_calls[i]);
  for (int net = 0; net < 2; ++net) {
    const dist::ReducerTimes times = simulation.reducer(net).take_times();
    result.allreduce.busy_seconds += times.busy_seconds / steps;
    result.allreduce.exposed_seconds += times.exposed_seconds / steps;
    result.allreduce.bytes += times.bytes;
    result.bucket_bytes[net] = simulation.reducer(net).bucket_bytes();
    result.launch_fraction[net] = simulation.reducer(net).take_launch_fractions();
    result.scheduled_ready[net] = simulation.scheduled_ready_fractions(net);
  }
  return result;
}

nlohmann::json simulation_record(const SimulationResult& r, const SimulatedTraining& simulation,
                                 const SimulationOptions& options, const nlohmann::json& launch) {
  nlohmann::json phases = nlohmann::json::array();
  for (size_t i = 0; i < simulation.phases().size(); ++i) {
    const auto& p = simulation.phases()[i];
    phases.push_back({{"name", p.name}, {"every", p.interval}, {"s", p.seconds}, {"measured_s", r.phase_seconds[i]}});
  }
  nlohmann::json buckets;
  for (int net = 0; net < 2; ++net) {
    buckets[simulation.network(net).name] = {{"bytes", r.bucket_bytes[net]},
                                             {"launch_fraction", r.launch_fraction[net]},
                                             {"scheduled_ready", r.scheduled_ready[net]}};
  }
  nlohmann::json record = launch;
  record.update({{"kind", "simulated"},
                 {"byte_scale", options.byte_scale},
                 {"forward_share", options.forward_share},
                 {"timed_steps", r.timed_steps},
                 {"step_s", r.step_seconds},
                 {"ranks_cpu_s", r.cpu_seconds},
                 {"phases", phases},
                 {"allreduce",
                  {{"busy_s", r.allreduce.busy_seconds},
                   {"exposed_s", r.allreduce.exposed_seconds},
                   {"bytes", r.allreduce.bytes}}},
                 {"buckets", buckets},
                 {"git_commit", train::source_commit()}});
  return record;
}

std::string format_simulation(const SimulationResult& r, const SimulatedTraining& simulation) {
  std::string out = fmt::format("{:<10} {:>12} {:>12} {:>10}\n", "phase", "wait ms", "measured ms", "every");
  for (size_t i = 0; i < simulation.phases().size(); ++i) {
    const auto& p = simulation.phases()[i];
    out += fmt::format("{:<10} {:>12.1f} {:>12.1f} {:>10}\n", p.name, p.seconds * 1e3, r.phase_seconds[i] * 1e3,
                       p.interval);
  }
  out += fmt::format("step {:.1f} ms (mean of {} steps, regularization amortised); allreduce per step busy {:.1f} ms, "
                     "exposed after backward {:.1f} ms; {:.2f} MB of gradients per rank\n",
                     r.step_seconds * 1e3, r.timed_steps, r.allreduce.busy_seconds * 1e3,
                     r.allreduce.exposed_seconds * 1e3, r.allreduce.bytes / 1e6);
  for (int net = 0; net < 2; ++net) {
    out += fmt::format("# {} buckets: {} of {} bytes in all, due at {:.3f}, launched at {:.3f} of their pass\n",
                       simulation.network(net).name, r.bucket_bytes[net].size(),
                       std::accumulate(r.bucket_bytes[net].begin(), r.bucket_bytes[net].end(), int64_t{0}),
                       fmt::join(r.scheduled_ready[net], " "), fmt::join(r.launch_fraction[net], " "));
  }
  return out;
}

}  // namespace sg2::bench
