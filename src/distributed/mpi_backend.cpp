// MPI: launch bootstrap (rank, size, local rank) and the CPU backend. All MPI calls of the backend
// run on its collective thread (MPI_THREAD_SERIALIZED), so allreduce overlaps with backward.
#include "backends.h"

#include "sg2/core/error.h"

#include "sg2/core/system.h"
#include <mpi.h>

#include <climits>

namespace sg2::dist {

namespace {

int g_world_rank = -1;

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return text;
}

#define SG2_MPI_CHECK(call) SG2_CHECK_STATUS("MPI", g_world_rank, call, MPI_SUCCESS, mpi_error_text)

MPI_Datatype mpi_datatype(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kShort: return MPI_INT16_T;
    case at::kByte: return MPI_UINT8_T;
    case at::kChar: return MPI_INT8_T;
    default: SG2_FAIL("the MPI backend has no datatype for {}", c10::toString(dtype));
  }
}

// Half and bfloat16 have no MPI type: they travel as float32.
bool travels_as_float(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

// Calls `op(pointer, count)` over chunks of at most INT_MAX elements.
template <class Op>
void for_each_chunk(const at::Tensor& t, Op op) {
  const int64_t element = t.element_size();
  auto* base = static_cast<char*>(t.data_ptr());
  for (int64_t offset = 0; offset < t.numel(); offset += INT_MAX) {
    const int64_t count = std::min<int64_t>(INT_MAX, t.numel() - offset);
    op(base + offset * element, static_cast<int>(count));
  }
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const World& world, double timeout_seconds)
      : Communicator(world),
        watchdog_(WatchdogOptions{timeout_seconds, 0.1, nullptr, nullptr,
                                  [world](const std::string& reason) { end_job_from_watchdog(world, reason); },
                                  [world](const std::string& reason) { end_job_from_stuck_watchdog(world, reason); }}),
        thread_(std::make_unique<CollectiveThread>(&watchdog_, "MPI collective")) {
    SG2_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
    SG2_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  }
  ~MpiCommunicator() override {
    thread_.reset();
    MPI_Comm_free(&comm_);
  }
  std::string backend() const override { return "mpi"; }
  at::Device device() const override { return at::Device(at::kCPU); }

  std::shared_ptr<Work> allreduce_async(std::vector<at::Tensor> tensors, ReduceOp op) override {
    check_allreduce_args(tensors, op, *this);
    return thread_->submit([this, tensors = std::move(tensors), op] {
      for (const auto& t : tensors) allreduce_one(t, op);
    });
  }

  void broadcast(std::vector<at::Tensor> tensors, int root) override {
    check_contiguous(tensors, *this, "broadcast");
    thread_->run([&] {
      for (const auto& t : tensors) {
        at::Tensor wire = travels_as_float(t) ? t.to(at::kFloat) : t;
        for_each_chunk(wire, [&](void* p, int n) { SG2_MPI_CHECK(MPI_Bcast(p, n, mpi_datatype(wire.scalar_type()), root, comm_)); });
        if (!wire.is_same(t)) t.copy_(wire);
      }
    });
  }

  at::Tensor allgather(const at::Tensor& input) override {
    check_contiguous({input}, *this, "allgather");
    at::Tensor wire = travels_as_float(input) ? input.to(at::kFloat) : input;
    std::vector<int64_t> shape{size()};
    shape.insert(shape.end(), input.sizes().begin(), input.sizes().end());
    at::Tensor out = at::empty(shape, wire.options());
    SG2_CHECK(wire.numel() <= INT_MAX, "allgather on rank {}: {} elements is over the MPI limit", rank(), wire.numel());
    thread_->run([&] {
      const MPI_Datatype type = mpi_datatype(wire.scalar_type());
      SG2_MPI_CHECK(MPI_Allgather(wire.data_ptr(), static_cast<int>(wire.numel()), type, out.data_ptr(),
                                  static_cast<int>(wire.numel()), type, comm_));
    });
    return out.to(input.scalar_type());
  }

  void barrier() override {
    thread_->run([&] { SG2_MPI_CHECK(MPI_Barrier(comm_)); });
  }

  void abort(const std::string& reason) noexcept override { mpi_abort_world(1); }

 private:
  void allreduce_one(const at::Tensor& t, ReduceOp op) {
    at::Tensor wire = travels_as_float(t) ? t.to(at::kFloat) : t;
    const MPI_Datatype type = mpi_datatype(wire.scalar_type());
    for_each_chunk(wire, [&](void* p, int n) { SG2_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p, n, type, MPI_SUM, comm_)); });
    if (op == ReduceOp::Avg) wire.div_(size());
    if (!wire.is_same(t)) t.copy_(wire);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  CollectiveWatchdog watchdog_;  // a peer that stalls would block MPI forever
  std::unique_ptr<CollectiveThread> thread_;
};

}  // namespace

bool mpi_compiled() { return true; }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);  // callable before MPI_Init
  const std::string version(text, static_cast<size_t>(length));
  return version.substr(0, version.find_first_of(",\n"));
}

World mpi_init_world() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    SG2_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    SG2_CHECK(provided >= MPI_THREAD_SERIALIZED,
              "this MPI library provides thread level {} but the MPI backend needs MPI_THREAD_SERIALIZED ({})",
              provided, static_cast<int>(MPI_THREAD_SERIALIZED));
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  World world;
  world.launcher = Launcher::Mpi;
  SG2_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world.rank));
  SG2_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world.size));
  g_world_rank = world.rank;
  MPI_Comm node = MPI_COMM_NULL;
  SG2_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL, &node));
  SG2_MPI_CHECK(MPI_Comm_rank(node, &world.local_rank));
  SG2_MPI_CHECK(MPI_Comm_size(node, &world.local_size));
  MPI_Comm_free(&node);
  return world;
}

void mpi_finalize() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

void mpi_abort_world(int code) noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

std::unique_ptr<Communicator> make_mpi_communicator(const World& world, double timeout_seconds) {
  return std::make_unique<MpiCommunicator>(world, timeout_seconds);
}

}  // namespace sg2::dist
