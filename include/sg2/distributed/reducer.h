#pragma once
// Gradient averaging over the ranks (Horovod's tensor fusion, DDP's buckets): parameters are laid
// out in fusion buckets of at most `bucket_bytes`, first in reverse registration order, then (after
// the first final backward, as DDP) in the order that backward produced the gradients on rank 0. During the final backward of a step each parameter's gradient, plus what its .grad
// already holds from earlier accumulation rounds, is copied into its bucket; a full bucket starts its
// allreduce at once, so communication overlaps the rest of backward. finish() launches what is left
// (a parameter that got no gradient counts as zeros), waits, and sets every .grad to sum / divisor,
// then applies the caller's transform to each bucket in place (the trainer's NaN/inf sanitising: one
// launch per bucket, not one per parameter).
//
// Cross-rank contract: all ranks build the reducer over the same parameters in the same order and
// run the same number of final backward passes.

#include "sg2/core/named_tensors.h"
#include "sg2/core/timer.h"
#include "sg2/distributed/communicator.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sg2::dist {

using sg2::NamedTensors;

struct ReducerOptions {
  int64_t bucket_bytes = 25 << 20;  // DDP's default
  bool overlap = true;             // false: every bucket starts after backward (for comparison)
};

struct ReducerTimes {
  double busy_seconds = 0;     // time the collectives ran (CPU backends)
  double exposed_seconds = 0;  // time finish() waited for them after backward
  int64_t bytes = 0;           // gradient bytes reduced per rank
};

class GradientReducer {
 public:
  GradientReducer(Communicator& comm, NamedTensors parameters, ReducerOptions options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Arms the gradient hooks for the next backward (the last accumulation round). Full buckets
  // start their allreduce during it where the options' overlap and `launch_in_backward` allow;
  // else all start at finish() (a backward captured into a CUDA graph launches no collective).
  void prepare_for_final_backward(bool launch_in_backward = true);
  // Which parameters' gradients the final backward delivered (after it): 1 or 0 per parameter, in
  // the order the constructor was given them.
  std::vector<char> arrivals() const;
  // Instead of a final backward with hooks: its replay in a CUDA graph, which writes the `arrivals`'
  // gradients into their buckets as the captured hooks did. finish() then launches every bucket.
  // Needs the bucket order learned (the captured buckets must stay the buckets).
  void prepare_for_replayed_backward(const std::vector<char>& arrivals);
  // Completes the reduction; .grad of every parameter = transform((sum over ranks) / divisor), the
  // transform (if any) applied in place to every bucket: [numel] holding the gradients of its parameters.
  using BucketTransform = std::function<void(at::Tensor& flat)>;
  void finish(double divisor, const BucketTransform& transform = {});

  // Bucket sizes in elements and in bytes, in launch order (for benchmarks and tests).
  std::vector<int64_t> bucket_numels() const;
  std::vector<int64_t> bucket_bytes() const;
  // Parameter names per bucket, in launch order (for tests).
  std::vector<std::vector<std::string>> bucket_parameter_names() const;
  // Accumulated since the last call.
  ReducerTimes take_times();
  // When each bucket's allreduce started, as a fraction of its pass (prepare_for_final_backward()
  // to finish(); 1: at finish, as without overlap), averaged over the passes since the last call.
  std::vector<double> take_launch_fractions();

 private:
  struct Slot {
    std::string name;
    at::Tensor parameter;
    size_t bucket;
    int64_t offset;
  };
  struct Bucket {
    at::Tensor flat;                 // [numel] of the parameters' dtype, on their device
    std::vector<size_t> slots;
    std::atomic<size_t> filled{0};
    std::shared_ptr<Work> work;
  };
  at::Tensor slot_view(const Slot& slot) const;  // the parameter's part of its bucket, shaped like it
  void build_buckets(const std::vector<size_t>& order);  // slot indices, first launched first
  void rebuild_buckets_in_arrival_order();
  void register_hooks();
  void on_gradient(size_t slot_index, const at::Tensor& grad);
  void launch_ready_buckets();

  Communicator& comm_;
  ReducerOptions options_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Bucket>> buckets_;
  std::vector<char> slot_ready_;
  std::vector<unsigned> hook_ids_;  // per slot, removed by the destructor
  std::atomic<bool> armed_{false};
  bool launch_in_backward_ = true;  // this pass's full buckets start during backward
  size_t next_launch_ = 0;  // buckets launch in index order on every rank
  std::vector<size_t> arrival_order_;  // slots in the order the first final backward produced them
  bool order_learned_ = false;
  std::mutex launch_mutex_;
  ReducerTimes times_;
  Stopwatch pass_clock_;                   // since prepare_for_final_backward()
  std::vector<double> launch_seconds_;     // per bucket, this pass
  std::vector<double> launch_fraction_sums_;
  int64_t passes_ = 0;
  void record_launch_fractions(double pass_seconds);
};

// The plain reference: one blocking allreduce per gradient, then .grad = sum / divisor.
// Parameters without .grad count as zeros.
void allreduce_gradients_per_tensor(Communicator& comm, const NamedTensors& parameters,
                                    double divisor);

}  // namespace sg2::dist
