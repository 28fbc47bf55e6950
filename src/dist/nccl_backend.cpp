// NCCL: CUDA tensors, one communicator per process, its own stream ordered against LibTorch's
// compute stream with events (compute -> NCCL before a collective, NCCL -> compute in wait()).
// The unique id comes from rank 0 through MPI_Bcast or the TCPStore (share_id).
#include "backends.h"

#include "sg2/core/error.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <thread>

namespace sg2::dist {

std::string nccl_library_version() {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return "unknown";
  return fmt::format("{}.{}.{}", version / 10000, (version % 10000) / 100, version % 100);
}

namespace {

int g_rank = -1;

#define SG2_CUDA_CHECK(call)                                                                                   \
  do {                                                                                                         \
    const cudaError_t _e = (call);                                                                             \
    SG2_CHECK(_e == cudaSuccess, "CUDA error on host {} rank {}: {} failed: {}", host_name(), g_rank, #call, \
              cudaGetErrorString(_e));                                                                         \
  } while (0)

#define SG2_NCCL_CHECK(call)                                                                                   \
  do {                                                                                                         \
    const ncclResult_t _r = (call);                                                                            \
    SG2_CHECK(_r == ncclSuccess, "NCCL error on host {} rank {}: {} failed: {}", host_name(), g_rank, #call, \
              ncclGetErrorString(_r));                                                                         \
  } while (0)

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

// Makes the compute stream wait for the collective; keeps its tensors alive until then.
class NcclWork final : public Work {
 public:
  NcclWork(cudaEvent_t done, cudaStream_t compute, std::vector<at::Tensor> tensors)
      : done_(done), compute_(compute), tensors_(std::move(tensors)) {}
  ~NcclWork() override { cudaEventDestroy(done_); }
  void wait() override { SG2_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_, 0)); }

 private:
  cudaEvent_t done_;
  cudaStream_t compute_;
  std::vector<at::Tensor> tensors_;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const World& world, const at::Device& device, const ShareBytes& share_id, double timeout_seconds)
      : Communicator(world), device_(device), timeout_seconds_(timeout_seconds) {
    g_rank = world.rank;
    SG2_CHECK(device.is_cuda(), "rank {}: dist.backend = nccl needs run.device = cuda (got {})", world.rank,
              device.str());
    int count = 0;
    SG2_CHECK(cudaGetDeviceCount(&count) == cudaSuccess && count > 0,
              "rank {} on host {}: dist.backend = nccl, but no CUDA GPU is visible", world.rank, host_name());
    SG2_CUDA_CHECK(cudaSetDevice(device.index()));
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
    SG2_NCCL_CHECK(ncclCommInitRank(&comm_, world.size, id, world.rank));
    SG2_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~NcclCommunicator() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  std::string backend() const override { return "nccl"; }
  at::Device device() const override { return device_; }

  std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor> tensors, ReduceOp op) override {
    check_allreduce_args(tensors, op, *this);
    const ncclRedOp_t nccl_op = op == ReduceOp::Avg ? ncclAvg : ncclSum;
    return enqueue(std::move(tensors), [&](const std::vector<at::Tensor>& all) {
      for (const auto& t : all) {
        SG2_NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), static_cast<size_t>(t.numel()),
                                     nccl_datatype(t.scalar_type()), nccl_op, comm_, stream_));
      }
    });
  }

  void broadcast(std::vector<at::Tensor> tensors, int root) override {
    check_contiguous(tensors, *this, "broadcast");
    enqueue(tensors, [&](const std::vector<at::Tensor>& all) {
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
    enqueue({input, out}, [&](const std::vector<at::Tensor>&) {
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
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

 private:
  template <class Launch>
  std::shared_ptr<Work> enqueue(std::vector<at::Tensor> tensors, Launch launch) {
    auto compute = static_cast<cudaStream_t>(current_cuda_stream(device_));
    cudaEvent_t ready = nullptr, done = nullptr;
    SG2_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    SG2_CUDA_CHECK(cudaEventRecord(ready, compute));
    SG2_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
    cudaEventDestroy(ready);
    SG2_NCCL_CHECK(ncclGroupStart());
    launch(tensors);
    SG2_NCCL_CHECK(ncclGroupEnd());
    SG2_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    SG2_CUDA_CHECK(cudaEventRecord(done, stream_));
    return std::make_shared<NcclWork>(done, compute, std::move(tensors));
  }

  void wait_stream_with_timeout(const char* op) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
    for (;;) {
      const cudaError_t state = cudaStreamQuery(stream_);
      if (state == cudaSuccess) return;
      SG2_CHECK(state == cudaErrorNotReady, "CUDA error in NCCL {} on rank {}: {}", op, rank(), cudaGetErrorString(state));
      ncclResult_t async_error = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async_error);
      if (async_error != ncclSuccess || std::chrono::steady_clock::now() > deadline) {
        abort(op);
        SG2_FAIL("NCCL {} on host {} rank {} of {}: {}", op, host_name(), rank(), size(),
                 async_error != ncclSuccess ? ncclGetErrorString(async_error)
                                            : fmt::format("no progress in {:.0f} s (dist.timeout)", timeout_seconds_));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  at::Device device_;
  double timeout_seconds_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const World& world, const at::Device& device,
                                                     const ShareBytes& share_id, double timeout_seconds) {
  return std::make_unique<NcclCommunicator>(world, device, share_id, timeout_seconds);
}

}  // namespace sg2::dist
