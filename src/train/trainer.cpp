#include "sg2/train/trainer.h"

#include "sg2/core/error.h"
#include "sg2/core/rng.h"

#include <ATen/core/Generator.h>
#include <spdlog/spdlog.h>
#include <torch/cuda.h>

namespace sg2::train {

at::ScalarType mixed_precision_type(ReducedType mode, const at::Device& device) {
  if (mode == ReducedType::Off || (mode == ReducedType::Auto && !device.is_cuda())) return at::kFloat;
  if (mode == ReducedType::BFloat16) return at::kBFloat16;
  SG2_CHECK(device.is_cuda(), "run.mixed_precision = float16 needs a CUDA device (LibTorch's CPU convolutions have "
                              "no float16): use bfloat16 or off on the CPU");
  return at::kHalf;
}

namespace {

// run.channels_last on `device`: auto is reduced on CUDA (faster there: docs/performance.md,
// "Memory layout"), off on the CPU (whose FIR kernel computes NCHW).
nn::ChannelsLast channels_last_on(ChannelsLastBlocks mode, const at::Device& device) {
  switch (mode) {
    case ChannelsLastBlocks::Auto: return device.is_cuda() ? nn::ChannelsLast::Reduced : nn::ChannelsLast::Off;
    case ChannelsLastBlocks::Off: return nn::ChannelsLast::Off;
    case ChannelsLastBlocks::Reduced: return nn::ChannelsLast::Reduced;
    case ChannelsLastBlocks::All: return nn::ChannelsLast::All;
  }
  return nn::ChannelsLast::Off;
}

// The precision of a run in `type` (kFloat: all float32) on `device`: the config's num_fp16_res,
// with run.channels_last's layout.
nn::MixedPrecision precision_in(const TrainConfig& c, const nn::MixedPrecision& asked, at::ScalarType type,
                                const at::Device& device) {
  nn::MixedPrecision p;
  p.num_fp16_res = type == at::kFloat ? 0 : asked.num_fp16_res;
  if (type != at::kFloat) p.reduced_type = type;
  p.channels_last = channels_last_on(c.run.channels_last, device);
  return p;
}

// A network's options as the config asks, with what the dataset gives (labels, resolution,
// channels) and the precision this device runs.
template <class Options>
Options options_for(const Options& asked, const TrainConfig& c, const data::Dataset& dataset, const at::Device& device) {
  Options options = asked;
  options.c_dim = dataset.label_dim();
  options.img_resolution = dataset.resolution();
  options.img_channels = dataset.shape().channels;
  options.precision = precision_in(c, asked.precision, mixed_precision_type(c.run.mixed_precision, device), device);
  return options;
}

}  // namespace

nn::MixedPrecision inference_precision(const TrainConfig& c, const at::Device& device) {
  const bool unavailable = c.run.mixed_precision == ReducedType::Float16 && !device.is_cuda();
  return precision_in(c, c.G.precision, unavailable ? at::kFloat : mixed_precision_type(c.run.mixed_precision, device),
                      device);
}

std::shared_ptr<data::Dataset> open_configured_dataset(const TrainConfig& c) { return data::open_dataset(c.data); }

nn::GeneratorOptions generator_options(const TrainConfig& c, const data::Dataset& dataset, const at::Device& device) {
  return options_for<nn::GeneratorOptions>(c.G, c, dataset, device);
}

nn::DiscriminatorOptions discriminator_options(const TrainConfig& c, const data::Dataset& dataset,
                                               const at::Device& device) {
  return options_for(c.D, c, dataset, device);
}

at::Device resolve_device(DeviceChoice choice, int local_rank) {
  const bool have_cuda = torch::cuda::is_available();
  if (choice == DeviceChoice::Cpu || (choice == DeviceChoice::Auto && !have_cuda)) return at::Device(at::kCPU);
  SG2_CHECK(have_cuda, "run.device = cuda, but LibTorch sees no CUDA device ({})",
            at::hasCUDA() ? "no GPU or driver found" : "this LibTorch was built without CUDA");
  const auto count = static_cast<int>(torch::cuda::device_count());
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
}

namespace {

// Keys of the per-step random streams (dist.rng = global).
constexpr uint64_t kLatentStream = 0x6c6174656e7473ull;
constexpr uint64_t kPassStream = 0x7061737365730aull;

std::unique_ptr<dist::Communicator> local_if_missing(dist::Communicator* comm, const at::Device& device) {
  return comm == nullptr ? dist::local_communicator(device) : nullptr;
}

}  // namespace

std::vector<std::string> frozen_D_layers(const nn::Discriminator& D, int64_t count) {
  std::vector<std::string> layers;
  for (const auto& block : D.named_children()) {
    if (std::dynamic_pointer_cast<nn::DiscriminatorBlock>(block.value()) == nullptr) continue;
    for (const auto& layer : block.value()->named_children()) layers.push_back(block.key() + "." + layer.key());
  }
  SG2_CHECK(count <= static_cast<int64_t>(layers.size()), "D.freeze_layers = {}: D's blocks hold {} layers ({} to {})",
            count, layers.size(), layers.front(), layers.back());
  layers.resize(static_cast<size_t>(count));
  return layers;
}

namespace {

// The parameters outside the `frozen` layers.
nn::NamedTensors without_layers(const nn::NamedTensors& parameters, const std::vector<std::string>& frozen) {
  nn::NamedTensors kept;
  for (const auto& [name, tensor] : parameters) {
    const bool in_frozen = std::any_of(frozen.begin(), frozen.end(),
                                       [&](const std::string& layer) { return name.rfind(layer + ".", 0) == 0; });
    if (!in_frozen) kept.emplace_back(name, tensor);
  }
  return kept;
}

}  // namespace

void Trainer::set_compute(const ops::ComputeSettings& compute) {
  for (auto* module : std::initializer_list<torch::nn::Module*>{G_.get(), D_.get(), G_ema_.get()}) {
    nn::set_compute(*module, compute);
  }
}

Trainer::Trainer(const TrainConfig& config, std::shared_ptr<const data::Dataset> dataset, const at::Device& device,
                 dist::Communicator* comm)
    : config_(config),
      host_sync_check_(config.run.host_sync_check),
      dataset_(std::move(dataset)),
      device_(device),
      owned_comm_(local_if_missing(comm, device)),
      comm_(comm != nullptr ? comm : owned_comm_.get()),
      loader_(std::make_shared<data::BatchLoader>(
                  dataset_, data::LoaderOptions{config.train.batch, comm_->rank(), comm_->size(),
                                                static_cast<uint64_t>(config.train.seed), config.data.mirror,
                                                /*pin_memory=*/device.is_cuda()}),
              config.data),
      step_rng_(make_rng(device, static_cast<uint64_t>(config.train.seed * comm_->size() + comm_->rank()))) {
  validate(config_, comm_->size());
  // Networks are initialised from the run seed on the CPU (identical on every rank), then moved.
  at::manual_seed(static_cast<uint64_t>(config.train.seed));
  G_ = std::make_shared<nn::Generator>(generator_options(config_, *dataset_, device_));
  D_ = std::make_shared<nn::Discriminator>(discriminator_options(config_, *dataset_, device_));
  G_ema_ = std::make_shared<nn::Generator>(G_->options);
  nn::copy_state(*G_, *G_ema_);
  for (auto* module : std::initializer_list<torch::nn::Module*>{G_.get(), D_.get(), G_ema_.get()}) {
    module->to(device_);
    set_requires_grad(*module, false);
  }
  set_compute(compute_settings_of(config_));

  G_trained_ = nn::named_parameters(*G_);
  D_frozen_ = train::frozen_D_layers(*D_, config.D.freeze_layers);
  D_trained_ = without_layers(nn::named_parameters(*D_), D_frozen_);
  augment_ = std::make_unique<AdaptiveAugment>(config_, device_);
  loss_ = std::make_unique<StyleGAN2Loss>(*G_, *D_, config.loss, device_);
  loss_->fused_modconv = fused_modconv_in_training(config);
  loss_->augment = augment_.get();

  // Phases as data: main every step, regularization every interval steps (lazy) or together.
  auto add_phases = [&](bool trains_G, double lr, int64_t interval, bool has_reg) {
    const AdamOptions adam{config.optim, lr};
    const std::string net = trains_G ? "G" : "D";
    auto& opt = trains_G ? G_opt_ : D_opt_;
    const nn::NamedTensors& trained = trained_parameters(trains_G);
    if (interval <= 0) {
      opt = std::make_unique<Adam>(trained, adam);
      phases_.push_back({trains_G ? Phase::Gboth : Phase::Dboth, net + "both", trains_G, 1});
      return;
    }
    opt = std::make_unique<Adam>(trained, lazy_regularization(adam, interval));
    phases_.push_back({trains_G ? Phase::Gmain : Phase::Dmain, net + "main", trains_G, 1});
    if (has_reg) phases_.push_back({trains_G ? Phase::Greg : Phase::Dreg, net + "reg", trains_G, interval});
  };
  add_phases(true, config.optim.G_lr, config.optim.G_reg_interval, config.loss.pl_weight != 0);
  add_phases(false, config.optim.D_lr, config.optim.D_reg_interval, config.loss.r1_gamma != 0);

  label_table_ = data::all_labels(*dataset_).to(device_);
  loss_->defer_running_means = global_rng();

  dist::ReducerOptions reducer{static_cast<int64_t>(config.dist.bucket_mb * (1 << 20)), config.dist.overlap};
  G_reducer_ = std::make_unique<dist::GradientReducer>(*comm_, G_trained_, reducer);
  D_reducer_ = std::make_unique<dist::GradientReducer>(*comm_, D_trained_, reducer);

  if (config.run.cuda_graphs) graphs_ = std::make_unique<PhaseGraphs>(device_, phases_.size());
  pass_rngs_.resize(phases_.size());

  state_.add_networks(*G_, *D_, *G_ema_);
  state_.add_optimizer("G_opt", *G_opt_);
  state_.add_optimizer("D_opt", *D_opt_);
  state_.add_tensor("loss.pl_mean", loss_->pl_mean);
  state_.add_tensor("augment.p", augment_->p, /*optional=*/true);
  state_.add_rank_sum("augment.real_signs", augment_->real_signs);
  state_.add_progress(progress_);
  broadcast_from_rank0();
}

Trainer::~Trainer() = default;

at::Generator Trainer::keyed_rng(std::initializer_list<uint64_t> keys) const {
  return make_rng(device_, mix_seed(keys));
}

// rank: this rank's stream. global: the whole global batch from a stream keyed by (seed, step,
// phase); this rank keeps its slice, so the draws do not depend on the world size.
std::pair<at::Tensor, at::Tensor> Trainer::draw_latents(size_t phase_index, int64_t local_batch) {
  const auto float_options = at::TensorOptions().device(device_).dtype(at::kFloat);
  const auto long_options = at::TensorOptions().device(device_).dtype(at::kLong);
  int64_t count = local_batch, first = 0;
  at::Generator gen = step_rng_;
  if (global_rng()) {
    count = config_.train.batch;
    first = comm_->rank() * local_batch;
    gen = keyed_rng({static_cast<uint64_t>(config_.train.seed), kLatentStream,
                           static_cast<uint64_t>(progress_.batch_idx), phase_index});
  }
  at::Tensor z = at::randn({count, G_->options.z_dim}, gen, float_options).narrow(0, first, local_batch);
  at::Tensor index = at::randint(0, dataset_->size(), {count}, gen, long_options).narrow(0, first, local_batch);
  return {z, label_table_.index_select(0, index)};
}

void Trainer::broadcast_from_rank0() { dist::broadcast_tensors(*comm_, state_.replicated_tensors(), 0); }

void Trainer::check_replicas(const std::string& what) {
  dist::check_replicas_identical(*comm_, state_.replicated_tensors(), what);
}

std::vector<at::Tensor> Trainer::gather_step_rng_states() {
  at::Tensor state;
  {
    std::lock_guard<std::mutex> lock(step_rng_.mutex());
    state = step_rng_.get_state();
  }
  const at::Tensor all = comm_->allgather(state.to(comm_->device())).cpu();  // [size, bytes]
  std::vector<at::Tensor> states;
  for (int r = 0; r < comm_->size(); ++r) states.push_back(all[r].clone());
  return states;
}

void Trainer::sum_rank_sums_on_rank0() {
  for (const auto& [name, tensor] : state_.rank_sums()) {
    const at::Tensor summed = comm_->sum_over_ranks(*tensor);
    tensor->copy_(comm_->rank() == 0 ? summed : at::zeros_like(summed));
  }
}

dist::ReducerTimes Trainer::take_reducer_times() {
  dist::ReducerTimes g = G_reducer_->take_times(), d = D_reducer_->take_times();
  return {g.busy_seconds + d.busy_seconds, g.exposed_seconds + d.exposed_seconds, g.bytes + d.bytes};
}

std::pair<std::vector<double>, std::vector<double>> Trainer::take_bucket_launch_fractions() {
  return {G_reducer_->take_launch_fractions(), D_reducer_->take_launch_fractions()};
}

// The passes' deferred sums of w and path lengths, added over ranks and applied once.
void Trainer::apply_deferred_running_means() {
  at::Tensor sums = loss_->take_deferred_sums();
  comm_->allreduce({sums}, dist::ReduceOp::Sum);
  loss_->apply_deferred_sums(sums);
}

// Each replica updates w_avg and pl_mean from its own passes, as in the reference; averaging them
// keeps the replicas identical.
void Trainer::average_running_means() {
  if (comm_->size() == 1) return;
  at::Tensor& w_avg = G_->mapping->w_avg;
  at::Tensor packed = at::cat({w_avg.defined() ? w_avg.flatten() : at::zeros({0}, device_), loss_->pl_mean.view({1})});
  comm_->allreduce({packed}, dist::ReduceOp::Avg);
  if (w_avg.defined()) w_avg.copy_(packed.narrow(0, 0, w_avg.numel()).view_as(w_avg));
  loss_->pl_mean.copy_(packed[-1]);
}

StepInputs Trainer::prepare_inputs() {
  StepInputs in;
  checked_for_host_sync("preparing the step's inputs", [&] {
    const int64_t per_round = batch_per_round(config_, comm_->size());
    const int64_t local_batch = config_.train.batch / comm_->size();
    data::Batch batch = loader_.get(progress_.batch_idx);
    stats_.report_scalar("Timing/data_wait_sec", loader_.last_wait_seconds());  // time training waited for data
    check_batch_is_pinned(batch);
    // uint8 over the bus, float here; from page-locked memory on CUDA, so the copies do not wait.
    at::Tensor real = batch.images.to(device_, /*non_blocking=*/true).to(at::kFloat) / 127.5 - 1;
    in.real_img = real.split(per_round);
    in.real_c = batch.labels.to(device_, /*non_blocking=*/true).split(per_round);
    for (size_t i = 0; i < phases_.size(); ++i) {
      auto [z, c] = draw_latents(i, local_batch);
      in.gen_z.push_back(z.split(per_round));
      in.gen_c.push_back(c.split(per_round));
    }
  });
  return in;
}

void Trainer::run_phase(size_t phase_index, const StepInputs& in) {
  checked_for_host_sync(phases_.at(phase_index).name, [&] { run_phase_unchecked(phase_index, in); });
}

dist::GradientReducer& Trainer::reducer_of(const TrainingPhase& phase) {
  return phase.trains_G ? *G_reducer_ : *D_reducer_;
}

// The rounds accumulate locally; the last one's backward feeds the reducer, which leaves the mean
// gradient over every pass of the global batch in .grad. A phase replayed from its CUDA graph needs
// none of the parameters' requires_grad: its autograd graph was recorded at the capture.
void Trainer::run_phase_unchecked(size_t phase_index, const StepInputs& in) {
  const TrainingPhase& phase = phases_.at(phase_index);
  const nn::NamedTensors& trained = trained_parameters(phase.trains_G);
  Adam& opt = phase.trains_G ? *G_opt_ : *D_opt_;
  const auto rounds = static_cast<int64_t>(in.real_img.size());
  opt.zero_grad();
  if (global_rng()) key_pass_rngs(phase_index, rounds);
  const bool eager = graphs_ == nullptr || graphs_->runs_eagerly(phase_index);
  if (eager || !graphs_->captured(phase_index)) {
    set_requires_grad(trained, true);
    if (eager) {
      run_rounds(phase_index, in, /*launch_in_backward=*/true);
    } else {
      capture_rounds(phase_index, in);
    }
    set_requires_grad(trained, false);
  }
  if (!eager) graphs_->replay(phase_index, in, stats_, reducer_of(phase));
  reducer_of(phase).finish(static_cast<double>(rounds * comm_->size()), sanitize_gradients);
  opt.step();
  if (global_rng()) apply_deferred_running_means();
}

void Trainer::capture_rounds(size_t phase_index, const StepInputs& in) {
  const TrainingPhase& phase = phases_.at(phase_index);
  const auto rounds = [&](const StepInputs& s) { run_rounds(phase_index, s, /*launch_in_backward=*/false); };
  try {
    std::vector<at::Generator> generators = pass_rngs_.at(phase_index);
    generators.push_back(step_rng_);
    graphs_->capture(phase_index, in, rounds, generators, stats_, reducer_of(phase));
  } catch (const std::exception& e) {
    SG2_FAIL("capturing {} into a CUDA graph failed (run.cuda_graphs false runs it without one): {}", phase.name,
             e.what());
  }
  spdlog::info("{}: captured into a CUDA graph after {} calls without; replayed from now on", phase.name,
               PhaseGraphs::kEagerRuns);
}

void Trainer::run_rounds(size_t phase_index, const StepInputs& in, bool launch_in_backward) {
  const TrainingPhase& phase = phases_.at(phase_index);
  const auto rounds = static_cast<int64_t>(in.real_img.size());
  for (int64_t round = 0; round < rounds; ++round) {
    if (round == rounds - 1) reducer_of(phase).prepare_for_final_backward(launch_in_backward);
    RoundInputs r{in.real_img[round], in.real_c[round], in.gen_z[phase_index][round], in.gen_c[phase_index][round]};
    at::Generator pass_rng = global_rng() ? pass_rngs_.at(phase_index).at(static_cast<size_t>(round)) : step_rng_;
    loss_->accumulate_gradients(phase.kind, r, static_cast<double>(phase.interval), pass_rng, stats_);
  }
}

// dist.rng = global: each pass draws from a generator keyed by its place in the global batch, not
// by the rank. The generators stay the same objects, reseeded for each call (as new ones would be
// seeded), so a phase captured into a CUDA graph has them registered and its replays follow.
void Trainer::key_pass_rngs(size_t phase_index, int64_t rounds) {
  std::vector<at::Generator>& rngs = pass_rngs_.at(phase_index);
  while (static_cast<int64_t>(rngs.size()) < rounds) rngs.push_back(make_rng(device_, 0));
  for (int64_t round = 0; round < rounds; ++round) {
    const auto global_pass = static_cast<uint64_t>(comm_->rank() * rounds + round);
    std::lock_guard<std::mutex> lock(rngs[round].mutex());
    rngs[round].set_current_seed(mix_seed({static_cast<uint64_t>(config_.train.seed), kPassStream,
                                           static_cast<uint64_t>(progress_.batch_idx), phase_index, global_pass}));
  }
}

void Trainer::update_generator_ema() {
  const double beta =
      ema_beta(config_.train.batch, config_.train.ema_kimg, config_.train.ema_rampup, progress_.cur_nimg);
  checked_for_host_sync("the G_ema update", [&] { update_ema(*G_ema_, *G_, beta); });
}

void Trainer::step() {
  const StepInputs inputs = prepare_inputs();
  for (size_t i = 0; i < phases_.size(); ++i) {
    if (progress_.batch_idx % phases_[i].interval == 0) run_phase(i, inputs);
  }
  if (!global_rng()) checked_for_host_sync("averaging w_avg and pl_mean", [&] { average_running_means(); });
  update_generator_ema();
  progress_.cur_nimg += config_.train.batch;
  progress_.batch_idx += 1;
  if (augment_->adjusts_after(progress_.batch_idx)) {
    checked_for_host_sync("the ADA adjustment of p", [&] { augment_->adjust(*comm_); });
  }
}

void Trainer::checked_for_host_sync(const std::string& what, const std::function<void()>& part) {
  run_checked_for_host_sync(host_sync_check_, what, device_, host_sync_waits_, part);
}

// A batch in pageable memory is copied to the GPU through a staging buffer while the host waits,
// which run.host_sync_check counts as a host synchronisation (LibTorch's check does not see it).
void Trainer::check_batch_is_pinned(const data::Batch& batch) {
  if (host_sync_check_ == HostSyncCheck::Off || !device_.is_cuda()) return;
  for (const auto& [name, tensor] : {std::pair{"images", batch.images}, std::pair{"labels", batch.labels}}) {
    if (tensor.numel() == 0 || tensor.is_pinned()) continue;
    const std::string message = fmt::format("the batch's {} are in pageable host memory: their copy to {} waits for "
                                            "the host (run.host_sync_check = {})",
                                            name, device_.str(), to_string(host_sync_check_));
    SG2_CHECK(host_sync_check_ != HostSyncCheck::Error, "{}", message);
    if (const auto note = host_sync_waits_.count(fmt::format("the batch's {} copy", name))) {
      spdlog::warn("{}{}", message, *note);
    }
  }
}

}  // namespace sg2::train
