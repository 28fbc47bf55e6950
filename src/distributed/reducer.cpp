#include "sg2/distributed/reducer.h"

#include "sg2/core/error.h"
#include "sg2/core/timer.h"
#include "sg2/device/cuda_device.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace sg2::dist {

GradientReducer::GradientReducer(Communicator& comm, NamedTensors parameters, ReducerOptions options)
    : comm_(comm), options_(options) {
  SG2_CHECK(options.bucket_bytes > 0, "dist.bucket_mb must be > 0");
  std::vector<size_t> order;
  for (auto it = parameters.rbegin(); it != parameters.rend(); ++it) {  // until backward shows its order
    order.push_back(slots_.size());
    slots_.push_back({it->first, it->second, 0, 0});
  }
  build_buckets(order);
  register_hooks();
}

// Reached with collectives in flight only when a step failed: their errors are logged, not thrown
// (a destructor that throws ends the process in std::terminate, before the error that ends the job).
GradientReducer::~GradientReducer() {
  armed_ = false;
  for (auto& bucket : buckets_) {
    if (!bucket->work) continue;
    try {
      bucket->work->wait();
    } catch (const std::exception& e) {
      spdlog::warn("rank {}: a gradient allreduce still in flight when its reducer ended failed: {}", comm_.rank(),
                   e.what());
    }
  }
  // The parameters outlive the reducer (a network can be trained again): their hooks must not
  // call into it.
  for (size_t i = 0; i < hook_ids_.size(); ++i) slots_[i].parameter.remove_hook(hook_ids_[i]);
}

void GradientReducer::build_buckets(const std::vector<size_t>& order) {
  buckets_.clear();
  int64_t bucket_bytes = 0;
  for (size_t index : order) {
    Slot& slot = slots_[index];
    const at::Tensor& p = slot.parameter;
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const bool fits = !buckets_.empty() && bucket_bytes + bytes <= options_.bucket_bytes &&
                      buckets_.back()->flat.scalar_type() == p.scalar_type() &&
                      buckets_.back()->flat.device() == p.device();
    if (!fits) {
      buckets_.push_back(std::make_unique<Bucket>());
      buckets_.back()->flat = at::empty({0}, p.options());
      bucket_bytes = 0;
    }
    buckets_.back()->slots.push_back(index);
    slot.bucket = buckets_.size() - 1;
    slot.offset = bucket_bytes / static_cast<int64_t>(p.element_size());
    bucket_bytes += bytes;
  }
  times_.bytes = 0;
  for (auto& bucket : buckets_) {
    const Slot& last = slots_[bucket->slots.back()];
    bucket->flat = at::zeros({last.offset + last.parameter.numel()}, last.parameter.options().requires_grad(false));
    times_.bytes += bucket->flat.numel() * static_cast<int64_t>(bucket->flat.element_size());
  }
  slot_ready_.assign(slots_.size(), 0);
}

// After the first final backward: buckets in the order its gradients arrived (rank 0's, so every
// rank agrees), so the first bucket fills and starts while backward still runs. Registration order
// says little: G registers synthesis before mapping, whose gradients arrive last. Rank 0's order
// reaches the host through the device: a wait, once per reducer, that run.host_sync_check allows.
void GradientReducer::rebuild_buckets_in_arrival_order() {
  const HostSyncAllowed once;
  std::vector<size_t> order = arrival_order_;
  std::vector<char> arrived(slots_.size(), 0);
  for (size_t i : order) arrived[i] = 1;
  for (size_t i = 0; i < slots_.size(); ++i) {  // no gradient in that backward: at the end
    if (!arrived[i]) order.push_back(i);
  }
  at::Tensor wire = at::tensor(std::vector<int64_t>(order.begin(), order.end()), at::kLong).to(comm_.device());
  comm_.broadcast({wire}, 0);
  const at::Tensor root_order = wire.cpu();
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<size_t>(root_order[int64_t(i)].item<int64_t>());
  build_buckets(order);
  arrival_order_.clear();
  launch_fraction_sums_.clear();  // the first pass's fractions belong to the old layout
  passes_ = 0;
  order_learned_ = true;
}

at::Tensor GradientReducer::slot_view(const Slot& slot) const {
  return buckets_[slot.bucket]->flat.narrow(0, slot.offset, slot.parameter.numel()).view(slot.parameter.sizes());
}

void GradientReducer::register_hooks() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    at::Tensor& p = slots_[i].parameter;
    const bool had_grad = p.requires_grad();
    p.requires_grad_(true);  // hooks can only be registered on tensors that require grad
    hook_ids_.push_back(p.register_hook([this, i](const at::Tensor& grad) { on_gradient(i, grad); }));
    p.requires_grad_(had_grad);
  }
}

void GradientReducer::prepare_for_final_backward(bool launch_in_backward) {
  std::fill(slot_ready_.begin(), slot_ready_.end(), 0);
  for (auto& bucket : buckets_) {
    bucket->filled = 0;
    bucket->work.reset();
  }
  next_launch_ = 0;
  launch_seconds_.assign(buckets_.size(), 0.0);
  pass_clock_.reset();
  launch_in_backward_ = launch_in_backward && options_.overlap;
  armed_ = true;
}

// Slots are the parameters in reverse (the constructor's order until backward shows its own).
std::vector<char> GradientReducer::arrivals() const { return {slot_ready_.rbegin(), slot_ready_.rend()}; }

void GradientReducer::prepare_for_replayed_backward(const std::vector<char>& arrivals) {
  SG2_CHECK(order_learned_, "rank {}: a replayed backward before the bucket order was learned (the first final "
                            "backward learns it)", comm_.rank());
  SG2_CHECK(arrivals.size() == slots_.size(), "rank {}: arrivals of {} parameters for a reducer of {}", comm_.rank(),
            arrivals.size(), slots_.size());
  prepare_for_final_backward(/*launch_in_backward=*/false);
  armed_ = false;  // a replay runs no hooks
  slot_ready_.assign(arrivals.rbegin(), arrivals.rend());
  for (size_t i = 0; i < slots_.size(); ++i) buckets_[slots_[i].bucket]->filled += slot_ready_[i] != 0;
}

void GradientReducer::on_gradient(size_t slot_index, const at::Tensor& grad) {
  if (!armed_) return;
  Slot& slot = slots_[slot_index];
  SG2_CHECK(!slot_ready_[slot_index], "rank {}: gradient of '{}' arrived twice in one final backward", comm_.rank(),
            slot.name);
  slot_ready_[slot_index] = 1;
  if (!order_learned_) {
    std::lock_guard<std::mutex> lock(launch_mutex_);
    arrival_order_.push_back(slot_index);
  }
  Bucket& bucket = *buckets_[slot.bucket];
  at::Tensor view = slot_view(slot);
  const at::Tensor& earlier = slot.parameter.grad();  // from earlier accumulation rounds
  if (earlier.defined()) {
    at::add_out(view, earlier, grad);
  } else {
    view.copy_(grad);
  }
  if (++bucket.filled == bucket.slots.size() && launch_in_backward_) launch_ready_buckets();
}

// Buckets start in index order on every rank, whatever order their gradients completed in.
void GradientReducer::launch_ready_buckets() {
  std::lock_guard<std::mutex> lock(launch_mutex_);
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->filled == buckets_[next_launch_]->slots.size()) {
    launch_seconds_[next_launch_] = pass_clock_.seconds();
    Bucket& bucket = *buckets_[next_launch_++];
    bucket.work = comm_.allreduce_async({bucket.flat}, ReduceOp::Sum);
  }
}

void GradientReducer::finish(double divisor, const BucketTransform& transform) {
  armed_ = false;
  const double pass_seconds = pass_clock_.seconds();
  const Stopwatch watch;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slot_ready_[i]) continue;  // no gradient in the final backward: earlier rounds' or zeros
    Slot& slot = slots_[i];
    Bucket& bucket = *buckets_[slot.bucket];
    at::Tensor view = slot_view(slot);
    if (slot.parameter.grad().defined()) {
      view.copy_(slot.parameter.grad());
    } else {
      view.zero_();
    }
    slot_ready_[i] = 1;
    ++bucket.filled;
  }
  launch_ready_buckets();
  SG2_CHECK(next_launch_ == buckets_.size(), "rank {}: {} of {} gradient buckets never filled", comm_.rank(),
            buckets_.size() - next_launch_, buckets_.size());
  record_launch_fractions(pass_seconds);
  for (auto& bucket : buckets_) {
    bucket->work->wait();
    times_.busy_seconds += bucket->work->busy_seconds();
    bucket->work.reset();
    if (divisor != 1) bucket->flat.div_(divisor);
    if (transform) transform(bucket->flat);
  }
  times_.exposed_seconds += watch.seconds();
  for (Slot& slot : slots_) slot.parameter.mutable_grad() = slot_view(slot);
  if (!order_learned_) rebuild_buckets_in_arrival_order();  // .grad keeps the old buckets' memory
}

std::vector<int64_t> GradientReducer::bucket_numels() const {
  std::vector<int64_t> numels;
  for (const auto& bucket : buckets_) numels.push_back(bucket->flat.numel());
  return numels;
}

std::vector<int64_t> GradientReducer::bucket_bytes() const {
  std::vector<int64_t> bytes;
  for (const auto& bucket : buckets_) bytes.push_back(static_cast<int64_t>(bucket->flat.nbytes()));
  return bytes;
}

std::vector<std::vector<std::string>> GradientReducer::bucket_parameter_names() const {
  std::vector<std::vector<std::string>> names;
  for (const auto& bucket : buckets_) {
    names.emplace_back();
    for (size_t slot : bucket->slots) names.back().push_back(slots_[slot].name);
  }
  return names;
}

void GradientReducer::record_launch_fractions(double pass_seconds) {
  if (launch_fraction_sums_.size() != buckets_.size()) {  // the first pass of this layout
    launch_fraction_sums_.assign(buckets_.size(), 0.0);
    passes_ = 0;
  }
  for (size_t b = 0; b < buckets_.size(); ++b)
    launch_fraction_sums_[b] += std::min(1.0, launch_seconds_[b] / std::max(pass_seconds, 1e-12));
  ++passes_;
}

std::vector<double> GradientReducer::take_launch_fractions() {
  std::vector<double> means(launch_fraction_sums_.size(), 0.0);
  for (size_t b = 0; b < means.size(); ++b) means[b] = launch_fraction_sums_[b] / std::max<int64_t>(passes_, 1);
  std::fill(launch_fraction_sums_.begin(), launch_fraction_sums_.end(), 0.0);
  passes_ = 0;
  return means;
}

ReducerTimes GradientReducer::take_times() {
  ReducerTimes out = times_;
  times_.busy_seconds = times_.exposed_seconds = 0;
  return out;
}

void allreduce_gradients_per_tensor(Communicator& comm, const NamedTensors& parameters,
                                    double divisor) {
  for (const auto& [name, p] : parameters) {
    at::Tensor grad = p.grad().defined() ? p.grad().contiguous().clone() : at::zeros_like(p);
    comm.allreduce({grad}, ReduceOp::Sum);
    const_cast<at::Tensor&>(p).mutable_grad() = grad.div_(divisor);
  }
}

}  // namespace sg2::dist
