// train.batch_gpu auto (see batch_probe.h).
#include "sg2/train/batch_probe.h"

#include "sg2/core/error.h"
#include "sg2/device/cuda_device.h"
#include "sg2/train/out_of_memory.h"
#include "sg2/train/trainer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace sg2::train {

std::vector<int64_t> batch_gpu_candidates(const TrainConfig& config, int world_size) {
  const int64_t per_process = config.train.batch / world_size;
  std::vector<int64_t> candidates;
  for (int64_t batch_gpu = per_process; batch_gpu >= 1; --batch_gpu) {
    if (per_process % batch_gpu != 0) continue;
    TrainConfig c = config;
    c.train.batch_gpu = batch_gpu;
    try {
      validate(c, world_size);
      candidates.push_back(batch_gpu);
    } catch (const Error&) {  // e.g. an mbstd group or pl_batch_shrink that this batch cannot hold
    }
  }
  return candidates;
}

double probed_step_need_gib(double peak_gib, double resident_gib, bool cuda_graphs) {
  return cuda_graphs ? peak_gib + std::max(0.0, peak_gib - resident_gib) : peak_gib;
}

double batch_probe_budget_gib(double total_gib, double outside_allocator_gib) {
  if (total_gib <= 0) return 0.0;
  return total_gib * kBatchProbeMemoryShare - outside_allocator_gib;
}

namespace {

// This rank's budget (batch_probe_budget_gib) and how it came about, for the log.
double probe_budget_gib(const at::Device& device, std::string* description) {
  release_cached_device_memory(device);  // what the allocator caches counts as ours
  const double total_gib = device_total_memory_gib(device);
  const double outside_gib = device_memory_outside_allocator_gib(device);
  const double budget_gib = batch_probe_budget_gib(total_gib, outside_gib);
  SG2_CHECK(total_gib <= 0 || budget_gib > 0, "train.batch_gpu auto on {}: {:.1f} of its {:.1f} GiB are in use "
            "outside LibTorch's allocator (other processes on this GPU?), more than the {:.0f}% a probed step may "
            "peak at; free the GPU or set train.batch_gpu", device.str(), outside_gib, total_gib,
            kBatchProbeMemoryShare * 100);
  if (total_gib > 0) {
    *description = fmt::format("budget {:.1f} GiB: {:.0f}% of {:.1f} GiB less {:.1f} GiB in use outside LibTorch's "
                               "allocator", budget_gib, kBatchProbeMemoryShare * 100, total_gib, outside_gib);
  }
  return budget_gib;
}

// NCCL allocates a collective's buffers at its first use, on the GPU but outside LibTorch's allocator:
// one allreduce of a gradient bucket's size first, so that the budget leaves room for them.
void warm_up_collectives(const TrainConfig& config, dist::Communicator& comm) {
  if (comm.size() == 1 || !comm.device().is_cuda()) return;
  const auto bucket_floats = static_cast<int64_t>(config.dist.bucket_mb * (1 << 20) / sizeof(float));
  at::Tensor bucket = at::zeros({std::max<int64_t>(1, bucket_floats)}, at::TensorOptions().device(comm.device()));
  comm.allreduce({bucket}, dist::ReduceOp::Sum);
  comm.barrier();
}

// What one candidate's probed step showed: the memory it peaked at, what training with it needs
// (probed_step_need_gib: more than the peak with run.cuda_graphs only), and why it does not fit
// (empty where it does).
struct ProbedStep {
  double peak_gib = 0;
  double need_gib = 0;
  std::string failure;

  // "peak 41.0 GiB", with run.cuda_graphs "peak 41.0 GiB, 71.0 GiB with run.cuda_graphs".
  std::string memory() const {
    const std::string graphs = need_gib > peak_gib ? fmt::format(", {:.1f} GiB with run.cuda_graphs", need_gib) : "";
    return fmt::format("peak {:.1f} GiB{}", peak_gib, graphs);
  }
  // The probe's log line for it.
  std::string said() const {
    if (!failure.empty()) return failure;
    return peak_gib > 0 ? "fits, " + memory() : "fits";
  }
};

// One whole training step of `batch_gpu` images on this rank alone.
ProbedStep try_step(const TrainConfig& config, const std::shared_ptr<const data::Dataset>& dataset,
                    const at::Device& device, int64_t batch_gpu, bool smallest, double budget_gib) {
  TrainConfig c = config;
  c.train.batch_gpu = batch_gpu;
  c.train.batch = batch_gpu;  // one round, on a local communicator
  c.data.workers = 0;
  c.run.host_sync_check = HostSyncCheck::Off;  // a probe is no training step, and its out-of-memory path may synchronize
  c.run.cuda_graphs = false;      // its one step captures nothing (a phase is captured at its third call)
  reset_device_peak_memory(device);
  ProbedStep probed;
  try {
    Trainer trainer(c, dataset, device, nullptr);
    const double resident_gib = device_allocated_memory_gib(device);
    trainer.step();  // batch 0: every phase, both regularizations included (no capture yet)
    probed.peak_gib = device_peak_memory_gib(device);
    probed.need_gib = probed_step_need_gib(probed.peak_gib, resident_gib, config.run.cuda_graphs);
    if (budget_gib > 0 && probed.need_gib > budget_gib) {
      probed.failure = fmt::format("{}, over the {:.1f} GiB budget", probed.memory(), budget_gib);
    }
  } catch (const std::exception& e) {
    probed.failure = probe_failure(e, batch_gpu, smallest);
  }
  release_cached_device_memory(device);  // for the next candidate, or for training
  return probed;
}

std::string budget_note(const BatchProbe& probe) { return probe.budget.empty() ? "" : "; " + probe.budget; }

}  // namespace

std::string probe_failure(const std::exception& e, int64_t batch_gpu, bool smallest) {
  if (!may_be_out_of_memory(e)) throw;
  const std::string message = message_of(e);
  const std::string gist = first_line(message).substr(0, 120);  // for the probe's log line
  if (is_out_of_memory(e)) return fmt::format("out of memory ({})", gist);
  SG2_CHECK(!smallest, "train.batch_gpu auto: even {} image(s) per round failed, with an error that a full GPU "
            "causes among other things (a library that does not match the driver, say); set train.batch_gpu to "
            "see it in training. The error: {}", batch_gpu, message);
  return fmt::format("failed, perhaps out of memory ({})", gist);
}

BatchProbe probe_batch_gpu(const TrainConfig& config, const std::shared_ptr<const data::Dataset>& dataset,
                           const at::Device& device, dist::Communicator& comm) {
  const std::vector<int64_t> candidates = batch_gpu_candidates(config, comm.size());
  SG2_CHECK(!candidates.empty(), "train.batch_gpu auto: no per-round batch passes the checks with train.batch {} "
            "over {} processes", config.train.batch, comm.size());
  BatchProbe probe;
  warm_up_collectives(config, comm);
  const double budget_gib = probe_budget_gib(device, &probe.budget);
  auto chosen = static_cast<int64_t>(candidates.size());  // none fits
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ProbedStep probed = try_step(config, dataset, device, candidates[i], i + 1 == candidates.size(), budget_gib);
    probe.tries.push_back(fmt::format("{}: {}", candidates[i], probed.said()));
    if (probed.failure.empty()) {
      chosen = static_cast<int64_t>(i);
      break;
    }
  }
  // Every rank takes the smallest choice of any rank (the largest index).
  const int64_t agreed = comm.max_over_ranks(chosen);
  SG2_CHECK(agreed < static_cast<int64_t>(candidates.size()),
            "train.batch_gpu auto: not even {} image(s) per round fit{} (this rank tried {}{})", candidates.back(),
            comm.size() > 1 ? " on every rank" : "", fmt::join(probe.tries, "; "), budget_note(probe));
  probe.batch_gpu = candidates[static_cast<size_t>(agreed)];
  return probe;
}

TrainConfig with_probed_batch_gpu(const TrainConfig& config, const std::shared_ptr<const data::Dataset>& dataset,
                                  const at::Device& device, dist::Communicator& comm, std::string* report) {
  if (!config.train.batch_gpu.automatic) return config;
  spdlog::info("train.batch_gpu auto: one training step per candidate batch, largest first...");
  const BatchProbe probe = probe_batch_gpu(config, dataset, device, comm);
  TrainConfig resolved = config;
  resolved.train.batch_gpu = probe.batch_gpu;
  *report = fmt::format("train.batch_gpu auto: {} images per process and round, {} rounds per step (tried {}{})",
                        probe.batch_gpu, rounds_per_step(resolved, comm.size()), fmt::join(probe.tries, "; "),
                        budget_note(probe));
  return resolved;
}

}  // namespace sg2::train
