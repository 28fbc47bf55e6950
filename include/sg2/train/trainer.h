#pragma once
// The training state and one training step (reference: training/training_loop.py): networks G, D
// and G_ema, one Adam per network, the phases Gmain/Greg/Dmain/Dreg as data, the loss, the batch
// loader and the step randomness. The tick loop, logs and files live in training_loop.h.

#include "sg2/data/prefetch_loader.h"
#include "sg2/device/cuda_device.h"
#include "sg2/distributed/communicator.h"
#include "sg2/distributed/consistency.h"
#include "sg2/distributed/reducer.h"
#include "sg2/nn/networks.h"
#include "sg2/train/adaptive_augment.h"
#include "sg2/train/config.h"
#include "sg2/train/loss.h"
#include "sg2/train/optim.h"
#include "sg2/train/phase_graphs.h"
#include "sg2/train/stats.h"
#include "sg2/train/training_state.h"

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace sg2::train {

struct TrainingPhase {
  Phase kind;
  std::string name;   // "Gmain", "Greg", ...
  bool trains_G;
  int64_t interval;   // runs when batch_idx % interval == 0
};

class Trainer {
 public:
  // comm: the job's communicator; null = a world of one (Local backend). Parameters and buffers
  // are broadcast from rank 0, so every replica starts identical.
  Trainer(const TrainConfig& config, std::shared_ptr<const data::Dataset> dataset, const at::Device& device,
          dist::Communicator* comm = nullptr);
  ~Trainer();

  // One step: every phase due at this batch index, then the EMA update and the counters.
  void step();

  // The pieces of step(), for benchmarks and tests. Each runs under run.host_sync_check.
  StepInputs prepare_inputs();
  void run_phase(size_t phase_index, const StepInputs& inputs);
  void update_generator_ema();
  // run.cuda_graphs: whether every phase runs from its graph by now (true without graphs).
  bool all_phases_captured() const { return graphs_ == nullptr || graphs_->all_captured(); }

  // Collectives (all ranks call them together).
  void broadcast_from_rank0();                        // the state's replicated tensors
  void check_replicas(const std::string& what);       // error naming the first tensor that differs
  std::vector<at::Tensor> gather_step_rng_states();  // rank r's step generator state at [r]
  void sum_rank_sums_on_rank0();                      // before a snapshot (TrainingState::add_rank_sum)
  dist::ReducerTimes take_reducer_times();
  // G's and D's bucket launch fractions since the last call (GradientReducer::take_launch_fractions).
  std::pair<std::vector<double>, std::vector<double>> take_bucket_launch_fractions();
  const dist::GradientReducer& G_reducer() const { return *G_reducer_; }
  const dist::GradientReducer& D_reducer() const { return *D_reducer_; }

  // How G, D and G_ema compute: compute_settings_of(config) from the start; a benchmark of the
  // reference ops, or a test, gives them others.
  void set_compute(const ops::ComputeSettings& compute);

  nn::Generator& G() { return *G_; }
  nn::Discriminator& D() { return *D_; }
  const nn::Generator& G() const { return *G_; }
  const nn::Discriminator& D() const { return *D_; }
  nn::Generator& G_ema() { return *G_ema_; }
  const std::vector<TrainingPhase>& phases() const { return phases_; }
  StatsCollector& stats() { return stats_; }
  double last_data_wait_seconds() const { return loader_.last_wait_seconds(); }  // the last step's wait for its batch
  void prime_data() { loader_.prime(progress_.batch_idx); }  // the next steps' batches decoded ahead, as in a run
  StyleGAN2Loss& loss() { return *loss_; }
  AdaptiveAugment& augment() { return *augment_; }
  // The parameters each network trains (D's less its frozen layers, D.freeze_layers).
  const nn::NamedTensors& trained_parameters(bool of_G) const { return of_G ? G_trained_ : D_trained_; }
  const std::vector<std::string>& frozen_D_layers() const { return D_frozen_; }  // D.freeze_layers' names
  // G, D, G_ema, both Adam states, pl_mean and the progress counters (training_state.h).
  const TrainingState& state() const { return state_; }
  at::Generator& step_rng() { return step_rng_; }  // this rank's step randomness (dist.rng = rank)
  Progress& progress() { return progress_; }
  const TrainConfig& config() const { return config_; }
  const data::Dataset& dataset() const { return *dataset_; }
  const std::shared_ptr<const data::Dataset>& shared_dataset() const { return dataset_; }
  const at::Device& device() const { return device_; }
  int rank() const { return comm_->rank(); }         // from the communicator (one process: 0 of 1)
  int world_size() const { return comm_->size(); }
  dist::Communicator& comm() { return *comm_; }
  bool global_rng() const { return config_.dist.rng == StepRandomness::Global; }

 private:
  at::Generator keyed_rng(std::initializer_list<uint64_t> keys) const;
  std::pair<at::Tensor, at::Tensor> draw_latents(size_t phase_index, int64_t local_batch);  // z [b, z], c [b, c]
  void average_running_means();         // dist.rng = rank, once per step
  void apply_deferred_running_means();  // dist.rng = global, once per phase
  void run_phase_unchecked(size_t phase_index, const StepInputs& inputs);
  // The phase's accumulation rounds, forward and backward (the last one's feeding the reducer).
  void run_rounds(size_t phase_index, const StepInputs& inputs, bool launch_in_backward);
  // Its rounds captured into its CUDA graph (run.cuda_graphs), over `inputs`, which the graph keeps.
  void capture_rounds(size_t phase_index, const StepInputs& inputs);
  dist::GradientReducer& reducer_of(const TrainingPhase& phase);
  void key_pass_rngs(size_t phase_index, int64_t rounds);  // dist.rng = global
  // Runs `part` of a step under run.host_sync_check; its error or warning names `what`.
  void checked_for_host_sync(const std::string& what, const std::function<void()>& part);
  void check_batch_is_pinned(const data::Batch& batch);

  TrainConfig config_;
  HostSyncCheck host_sync_check_;
  HostSyncWaitLog host_sync_waits_;  // which parts waited how often, under warn
  std::shared_ptr<const data::Dataset> dataset_;
  at::Device device_;
  std::unique_ptr<dist::Communicator> owned_comm_;  // the Local one when none was given
  dist::Communicator* comm_;
  std::shared_ptr<nn::Generator> G_, G_ema_;
  std::shared_ptr<nn::Discriminator> D_;
  std::unique_ptr<Adam> G_opt_, D_opt_;
  nn::NamedTensors G_trained_, D_trained_;
  std::vector<std::string> D_frozen_;
  std::unique_ptr<AdaptiveAugment> augment_;
  std::unique_ptr<StyleGAN2Loss> loss_;
  std::unique_ptr<dist::GradientReducer> G_reducer_, D_reducer_;
  std::vector<TrainingPhase> phases_;
  std::unique_ptr<PhaseGraphs> graphs_;  // run.cuda_graphs
  std::vector<std::vector<at::Generator>> pass_rngs_;  // dist.rng = global: [phase][round]
  data::PrefetchLoader loader_;
  at::Tensor label_table_;  // [N, c_dim] on the device, for drawing generator labels
  at::Generator step_rng_;
  StatsCollector stats_;
  Progress progress_;
  TrainingState state_;
};

// Freeze-D: the names of D's first `count` layers ("b32.fromrgb", "b32.conv0", ...), counted as the
// reference counts them: each block's fromrgb, conv0, conv1 and skip, from the highest resolution
// down (the epilogue is never frozen). More layers than the blocks hold is an error naming how many.
std::vector<std::string> frozen_D_layers(const nn::Discriminator& D, int64_t count);

// Opens the dataset a config names.
std::shared_ptr<data::Dataset> open_configured_dataset(const TrainConfig& config);

// The network options a config and a dataset give.
nn::GeneratorOptions generator_options(const TrainConfig& config, const data::Dataset& dataset,
                                       const at::Device& device);
nn::DiscriminatorOptions discriminator_options(const TrainConfig& config, const data::Dataset& dataset,
                                               const at::Device& device);

// The reduced type run.mixed_precision asks for on this device (kFloat: off).
at::ScalarType mixed_precision_type(ReducedType mode, const at::Device& device);
// The precision G runs inference with on this device, as it trained (the reference's pickles keep
// their float16 blocks): G.num_fp16_res in run.mixed_precision's type, float32 where the device has
// no such type (float16 on the CPU).
nn::MixedPrecision inference_precision(const TrainConfig& config, const at::Device& device);

// Auto -> CUDA if LibTorch sees a GPU, else CPU; Cuda without one is an error. On CUDA, the GPU of
// local_rank (modulo the GPUs the process sees).
at::Device resolve_device(DeviceChoice choice, int local_rank = 0);

using nn::make_rng;

}  // namespace sg2::train
