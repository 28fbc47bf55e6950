#pragma once
// Collectives over the processes of one job. Cross-rank contract of every collective: all ranks
// call it, in the same order, with tensors of the same shapes and dtypes, on the backend's device
// kind (CUDA for NCCL, CPU for MPI / Gloo / Local). Counts come from numel(), never bytes.
//
// Backends live in their own files (mpi_backend.cpp, nccl_backend.cpp, gloo_backend.cpp,
// local_backend.cpp) with a stub beside each optional one, so every build compiles and runs.

#include "sg2/distributed/world.h"

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sg2::dist {

enum class ReduceOp { Sum, Avg };

// An asynchronous collective. wait() returns once the result may be used by the caller's next
// operation (CPU: the data is there; CUDA: the caller's stream is ordered after it); it rethrows
// the collective's error. busy_seconds() is the time the collective itself ran, when known.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual double busy_seconds() const { return 0; }
};

class Communicator {
 public:
  explicit Communicator(World world) : world_(std::move(world)) {}
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const World& world() const { return world_; }
  int rank() const { return world_.rank; }
  int size() const { return world_.size; }
  virtual std::string backend() const = 0;
  virtual at::Device device() const = 0;  // where this backend's tensors live
  // Whether wait() blocks the host until a collective is done, so that host clocks time it (the
  // reducer's busy and exposed seconds); not on NCCL, whose collectives run on a GPU stream.
  virtual bool host_waits_for_collectives() const { return true; }

  // In-place reduction of every tensor (each contiguous). Avg on floating tensors only.
  virtual std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor> tensors, ReduceOp op) = 0;
  void allreduce(std::vector<at::Tensor> tensors, ReduceOp op) { allreduce_async(std::move(tensors), op)->wait(); }

  // Root's values into every rank's tensors, in place.
  virtual void broadcast(std::vector<at::Tensor> tensors, int root) = 0;

  // Every rank's tensor, concatenated along a new leading dimension: [size, *input.shape].
  virtual at::Tensor allgather(const at::Tensor& input) = 0;

  virtual void barrier() = 0;

  // Ends the whole job as fast as the backend can (MPI_Abort, ncclCommAbort); never throws.
  virtual void abort(const std::string& reason) noexcept = 0;

  // A copy of `tensor` on this backend's device holding its sum over every rank (the input stays as
  // it is, wherever it lives).
  at::Tensor sum_over_ranks(const at::Tensor& tensor);
  // The largest of every rank's `value`, on every rank.
  int64_t max_over_ranks(int64_t value);
  // True on every rank when `flag` is true on any rank.
  bool any(bool flag) { return max_over_ranks(flag ? 1 : 0) > 0; }
  // Raw bytes from root to every rank (for unique ids and small metadata).
  std::string broadcast_bytes(const std::string& bytes, int root);

 private:
  World world_;
};

// The communication libraries this build links: {"mpi": "Open MPI v4.1.4", "nccl": "2.28.9"}
// ("none" where not built).
std::vector<std::pair<std::string, std::string>> communication_library_versions();

// A world of one process on `device` (the Local backend), for single-process use without a Session.
std::unique_ptr<Communicator> local_communicator(const at::Device& device);

}  // namespace sg2::dist
