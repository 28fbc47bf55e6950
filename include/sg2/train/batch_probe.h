#pragma once
// train.batch_gpu auto: the largest per-process batch of one accumulation round whose whole training
// step (every phase, regularization included) fits in the device's memory. Each rank tries the
// candidates from the largest down with a real step on its own device (a local communicator, so an
// allocation failure on one rank leaves no collective waiting), keeps the largest whose peak stays
// within the budget, and all ranks then take the smallest rank's choice.

#include "sg2/data/dataset.h"
#include "sg2/distributed/communicator.h"
#include "sg2/train/config.h"

#include <ATen/ATen.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace sg2::train {

// The share of the device's memory a probed step may peak at: the rest is left to the allocator's
// fragmentation, the metrics and the sample grids.
constexpr double kBatchProbeMemoryShare = 0.85;

// The peak a probed step may reach: that share of the device's memory, less what is in use outside
// LibTorch's allocator when the probe starts (the CUDA context, NCCL, other processes on the GPU).
// 0 where nothing bounds it (the CPU: total_gib 0); at most 0 on a GPU where the rest leaves no room.
double batch_probe_budget_gib(double total_gib, double outside_allocator_gib);

// The memory a probed step shows that training with the candidate needs: its peak; with
// run.cuda_graphs its working memory (the peak less what was resident before the step: weights,
// G_ema, buckets) once more, since a captured phase's pool keeps its working memory while a phase
// not yet captured runs as itself beside it (config-f: Dreg, the last one, at step 32).
double probed_step_need_gib(double peak_gib, double resident_gib, bool cuda_graphs);

// Values train.batch_gpu can take: divisors of the per-process batch that pass validate(), largest first.
std::vector<int64_t> batch_gpu_candidates(const TrainConfig& config, int world_size);

// A candidate's failed step as the probe's log says it; call it from the handler of the step's
// error. An allocation failure is "out of memory (...)"; an error that means one only sometimes
// (may_be_out_of_memory: a cuBLAS handle, cuDNN's engines) reads "failed, perhaps out of memory
// (...)", except at the smallest candidate, where no smaller batch is left to tell a full GPU from a
// broken library: it throws an Error with the whole message. Any other error is thrown again as it is.
std::string probe_failure(const std::exception& e, int64_t batch_gpu, bool smallest);

struct BatchProbe {
  int64_t batch_gpu = 0;
  std::vector<std::string> tries;  // one line per candidate this rank tried
  std::string budget;              // how the peak was bounded on this rank; empty where it was not
};

// Probes this rank's device and agrees with the others through `comm`; the config is unchanged.
BatchProbe probe_batch_gpu(const TrainConfig& config, const std::shared_ptr<const data::Dataset>& dataset,
                           const at::Device& device, dist::Communicator& comm);

// The config with train.batch_gpu auto replaced by the probed value (which a run's config.yaml then
// records), and a line saying what was tried in `report`; other configs come back unchanged.
TrainConfig with_probed_batch_gpu(const TrainConfig& config, const std::shared_ptr<const data::Dataset>& dataset,
                                  const at::Device& device, dist::Communicator& comm, std::string* report);

}  // namespace sg2::train
