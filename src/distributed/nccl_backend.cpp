// NCCL: CUDA tensors, one communicator per process, its own stream ordered against LibTorch's
// compute stream with events (compute -> NCCL before a collective, NCCL -> compute in wait()).
// The unique id comes from rank 0 through MPI_Bcast or the TCPStore (share_id). A watchdog thread
// (watchdog.h) ends the job when a collective outlives dist.timeout or NCCL reports an error.
#include "backends.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/device/cuda_device.h"
#include "sg2/distributed/watchdog.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace sg2::dist {

std::string nccl_library_version() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return "unknown";
  return fmt::format("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100);
}

namespace {

int g_rank = -1;

#define SG2_CUDA_CHECK(call) SG2_CHECK_STATUS("CUDA", g_rank, call, cudaSuccess, cudaGetErrorString)
#define SG2_NCCL_CHECK(call) SG2_CHECK_STATUS("NCCL", g_rank, call, ncclSuccess, ncclGetErrorString)

// Whether a query's answer is "not yet". The runtime also keeps that answer as the thread's last
// error, which the next kernel launch check (LibTorch's or ours) would report: it is cleared here.
bool not_ready(cudaError_t status) {
  if (status != cudaErrorNotReady) return false;
  (void)cudaGetLastError();
  return true;
}

ncclDataType_t nccl_datatype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
#if NCCL_MAJOR > 2 || (NCCL_MAJOR == 2 && NCCL_MINOR >= 10)
    case at::kBFloat16: return ncclBfloat16;
#endif
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kByte: return ncclUint8;
    case at::kChar: return ncclInt8;
    default: SG2_FAIL("the NCCL backend has no datatype for {}", c10::toString(dtype));
  }
}

// A CUDA event shared by a work and the watchdog: destroyed when both let go.
class CudaEvent {
 public:
  CudaEvent() { SG2_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
  ~CudaEvent() { cudaEventDestroy(event_); }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }
  // Reached by the device. A CUDA error also ends the watch: it is the context's (sticky), and the
  // training thread's next CUDA call reports it; NCCL's own errors are the async check's.
  bool completed() const { return !not_ready(cudaEventQuery(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// Makes a device the calling thread's current one for a scope. Events belong to the device current
// at their creation and can only be recorded on that device's streams; a thread that calls a
// collective may have another device current (its own default, 0).
class CurrentDeviceScope {
 public:
  explicit CurrentDeviceScope(int index) : index_(index) {
    SG2_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != index_) SG2_CUDA_CHECK(cudaSetDevice(index_));
  }
  ~CurrentDeviceScope() {
    if (previous_ != index_) cudaSetDevice(previous_);
  }
  CurrentDeviceScope(const CurrentDeviceScope&) = delete;
  CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;

 private:
  int index_;
  int previous_ = 0;
};

// Makes the waiting thread's current stream wait for the collective (a gradient hook enqueues it from
// autograd's device thread; the trainer waits from its own). It holds the tensors until it is
// destroyed, which may be before NCCL is done with them: that is safe once wait() has run, because
// they were allocated on the stream that wait() makes wait (the caching allocator hands a freed
// block only to work on that stream, which then runs after the collective). A caller that drops the
// work unwaited, or allocated the tensors under another stream, must keep them itself.
class NcclWork final : public Work {
 public:
  NcclWork(std::shared_ptr<CudaEvent> done, at::Device device, std::vector<at::Tensor> tensors)
      : done_(std::move(done)), device_(device), tensors_(std::move(tensors)) {}
  void wait() override {
    auto waiting = static_cast<cudaStream_t>(current_cuda_stream(device_));
    SG2_CUDA_CHECK(cudaStreamWaitEvent(waiting, done_->get(), 0));
  }

 private:
  std::shared_ptr<CudaEvent> done_;
  at::Device device_;
  std::vector<at::Tensor> tensors_;
};

// Sets the flag when the scope ends, however it ends.
class SetOnExit {
 public:
  explicit SetOnExit(std::atomic<bool>& flag) : flag_(flag) {}
  ~SetOnExit() { flag_ = true; }
  SetOnExit(const SetOnExit&) = delete;
  SetOnExit& operator=(const SetOnExit&) = delete;

 private:
  std::atomic<bool>& flag_;
};

// The rank's GPU: the device's index, or the local rank's (modulo the GPUs this process sees, as
// resolve_device: one each where a launcher binds one GPU per task) where it names none ("cuda").
at::Device rank_gpu(const World& world, const at::Device& device) {
  SG2_CHECK(device.is_cuda(), "rank {}: dist.backend = nccl needs run.device = cuda (got {})", world.rank,
            device.str());
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) (void)cudaGetLastError();
  SG2_CHECK(status == cudaSuccess && count > 0, "rank {} on host {}: dist.backend = nccl, but no CUDA GPU is visible",
            world.rank, hostname());
  const int index = device.has_index() ? device.index() : world.local_rank % count;
  SG2_CHECK(index < count, "rank {} on host {}: run.device {} does not exist: this process sees {} GPU(s)",
            world.rank, hostname(), device.str(), count);
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index));
}

// ncclCommInitRank's failure; "invalid usage" is most often two ranks on one GPU, which NCCL refuses.
std::string describe_init_failure(ncclResult_t status) {
  if (status != ncclInvalidUsage) return ncclGetErrorString(status);
  return fmt::format("{} (NCCL refuses two ranks on one GPU: start at most one process per GPU on each host)",
                     ncclGetErrorString(status));
}

// Ends an NCCL group however the calls inside it end: an open group makes every later call hang.
class NcclGroup {
 public:
  NcclGroup() { SG2_NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroup() {
    if (open_) ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end() {
    open_ = false;
    SG2_NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const World& world, const at::Device& device, const ShareBytes& share_id, double timeout_seconds)
      : Communicator(world), device_(rank_gpu(world, device)), timeout_seconds_(timeout_seconds) {
    g_rank = world.rank;
    SG2_CUDA_CHECK(cudaSetDevice(device_.index()));
    ncclUniqueId id;
    std::string id_bytes;
    if (world.rank == 0) {
      SG2_NCCL_CHECK(ncclGetUniqueId(&id));
      id_bytes.assign(reinterpret_cast<const char*>(&id), sizeof(id));
    }
    id_bytes = share_id(id_bytes);
    SG2_CHECK(id_bytes.size() == sizeof(id), "rank {}: NCCL unique id of {} bytes, expected {}", world.rank,
              id_bytes.size(), sizeof(id));
    std::memcpy(&id, id_bytes.data(), sizeof(id));
    // Watched from before the init: ncclCommInitRank waits for every rank, and one that died or
    // stalls after the id's exchange would leave it waiting forever.
    watchdog_ = std::make_unique<CollectiveWatchdog>(WatchdogOptions{
        timeout_seconds, 0.1, [index = device_.index()] { cudaSetDevice(index); }, [this] { return async_error(); },
        [this](const std::string& reason) { abort_and_end_job(reason); },
        [this](const std::string& reason) { dist::end_job_from_stuck_watchdog(this->world(), reason); }});
    ncclComm_t comm = nullptr;
    {
      auto initialised = std::make_shared<std::atomic<bool>>(false);
      watchdog_->watch(fmt::format("NCCL's communicator (ncclCommInitRank of rank {} of {})", world.rank, world.size),
                       [initialised] { return initialised->load(); });
      const SetOnExit init_ends(*initialised);
      SG2_CHECK_STATUS("NCCL", world.rank, ncclCommInitRank(&comm, world.size, id, world.rank), ncclSuccess,
                       describe_init_failure);
    }
    comm_ = comm;
    SG2_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~NcclCommunicator() override {
    watchdog_.reset();  // before the communicator it polls
    if (comm_ != nullptr) ncclCommDestroy(comm_.load());
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  std::string backend() const override { return "nccl"; }
  at::Device device() const override { return device_; }
  bool host_waits_for_collectives() const override { return false; }

  std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor> tensors, ReduceOp op) override {
    check_allreduce_args(tensors, op, *this);
    const ncclRedOp_t nccl_op = op == ReduceOp::Avg ? ncclAvg : ncclSum;
    return enqueue("allreduce", std::move(tensors), [&](const std::vector<at::Tensor>& all) {
      for (const auto& t : all) {
        SG2_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                                     nccl_datatype(t.scalar_type()), nccl_op, comm_, stream_));
      }
    });
  }

  void broadcast(std::vector<at::Tensor> tensors, int root) override {
    check_contiguous(tensors, *this, "broadcast");
    enqueue("broadcast", tensors, [&](const std::vector<at::Tensor>& all) {
      for (const auto& t : all) {
        SG2_NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                                     nccl_datatype(t.scalar_type()), root, comm_, stream_));
      }
    })->wait();
  }

  at::Tensor allgather(const at::Tensor& input) override {
    check_contiguous({input}, *this, "allgather");
    std::vector<int64_t> shape{size()};
    shape.insert(shape.end(), input.sizes().begin(), input.sizes().end());
    at::Tensor out = at::empty(shape, input.options());
    enqueue("allgather", {input, out}, [&](const std::vector<at::Tensor>&) {
      SG2_NCCL_CHECK(ncclAllGather(input.data_ptr(), out.data_ptr(), static_cast<size_t>(input.numel()),
                                   nccl_datatype(input.scalar_type()), comm_, stream_));
    })->wait();
    return out;
  }

  // A one-element allreduce the host waits for, failing (and aborting NCCL) after the timeout.
  void barrier() override {
    at::Tensor token = at::zeros({1}, at::TensorOptions().device(device_));
    allreduce_async({token}, ReduceOp::Sum)->wait();
    wait_stream_with_timeout("barrier");
  }

  void abort(const std::string& reason) noexcept override {
    const std::lock_guard<std::mutex> lock(abort_mutex_);  // no async-error query of a communicator being freed
    ncclComm_t comm = comm_.exchange(nullptr);             // once, whichever thread comes first
    if (comm != nullptr) ncclCommAbort(comm);
  }

 private:
  // Watched from before the launch: NCCL connects a collective's peers on its first use, inside
  // ncclGroupEnd, where the host would wait unwatched for a peer that died or stalls. Until the
  // launch returns (or throws) the collective counts as running.
  template <class Launch>
  std::shared_ptr<Work> enqueue(const char* op, std::vector<at::Tensor> tensors, Launch launch) {
    const CurrentDeviceScope on_device(device_.index());
    auto done = std::make_shared<CudaEvent>();
    auto launched = std::make_shared<std::atomic<bool>>(false);
    watchdog_->watch(fmt::format("NCCL {} #{} ({} tensor(s))", op, ++collectives_, tensors.size()),
                     [done, launched] { return *launched && done->completed(); });
    {
      const SetOnExit launch_ends(*launched);
      const CudaEvent ready;
      SG2_CUDA_CHECK(cudaEventRecord(ready.get(), static_cast<cudaStream_t>(current_cuda_stream(device_))));
      SG2_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready.get(), 0));
      NcclGroup group;
      launch(tensors);
      group.end();
      SG2_CUDA_CHECK(cudaEventRecord(done->get(), stream_));
    }
    return std::make_shared<NcclWork>(std::move(done), device_, std::move(tensors));
  }

  // The communicator's pending asynchronous error (ncclSuccess when none, or once aborted). Under
  // abort's lock: the watchdog and a barrier's wait both ask, and either may abort, which frees the
  // communicator. (A launch reads comm_ unlocked: it may be blocked in NCCL when an abort is due.)
  ncclResult_t pending_async_error() {
    const std::lock_guard<std::mutex> lock(abort_mutex_);
    ncclComm_t comm = comm_;
    ncclResult_t error = ncclSuccess;
    if (comm == nullptr || ncclCommGetAsyncError(comm, &error) != ncclSuccess) return ncclSuccess;
    return error;
  }

  // The same for the watchdog: "" when none.
  std::string async_error() {
    const ncclResult_t error = pending_async_error();
    if (error == ncclSuccess) return "";
    return fmt::format("NCCL reports an asynchronous error: {}", ncclGetErrorString(error));
  }

  // From the watchdog thread: the job cannot continue. The training thread may be blocked in a copy
  // that waits for the collective, so this thread ends the process (and, through MPI, the job).
  [[noreturn]] void abort_and_end_job(const std::string& reason) {
    abort(reason);  // ncclCommAbort: the stalled kernels end
    dist::end_job_from_watchdog(world(), reason);
  }

  void wait_stream_with_timeout(const char* op) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream_);
      if (state == cudaSuccess) return;
      SG2_CHECK(not_ready(state), "CUDA error in NCCL {} on rank {}: {}", op, rank(), cudaGetErrorString(state));
      const ncclResult_t async_error = pending_async_error();
      if (async_error != ncclSuccess || std::chrono::steady_clock::now() > deadline) {
        abort(op);
        SG2_FAIL("NCCL {} on host {} rank {} of {}: {}", op, hostname(), rank(), size(),
                 async_error != ncclSuccess ? ncclGetErrorString(async_error)
                                            : fmt::format("no progress in {:.0f} s (dist.timeout)", timeout_seconds_));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  at::Device device_;
  double timeout_seconds_;
  std::atomic<ncclComm_t> comm_{nullptr};  // null once aborted (the watchdog reads it)
  std::mutex abort_mutex_;
  cudaStream_t stream_ = nullptr;
  int64_t collectives_ = 0;
  std::unique_ptr<CollectiveWatchdog> watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const World& world, const at::Device& device,
                                                     const ShareBytes& share_id, double timeout_seconds) {
  return std::make_unique<NcclCommunicator>(world, device, share_id, timeout_seconds);
}

}  // namespace sg2::dist
