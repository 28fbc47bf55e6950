#pragma once
// Internal: factories of the backends. Each optional backend has a stub file that throws a clear
// error, chosen by CMake, so call sites never #ifdef.

#include "sg2/distributed/communicator.h"
#include "sg2/distributed/watchdog.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace c10d {
class Store;
}
namespace c10 {
template <class T, class NullType>
class intrusive_ptr;
}

namespace sg2::dist {

// --- MPI (mpi_backend.cpp / mpi_none.cpp) ---
bool mpi_compiled();
std::string mpi_library_version();   // "none" without MPI
World mpi_init_world();  // MPI_Init_thread(SERIALIZED) + ranks; idempotent
void mpi_finalize();
void mpi_abort_world(int code) noexcept;  // MPI_Abort(MPI_COMM_WORLD), when MPI is initialized
std::unique_ptr<Communicator> make_mpi_communicator(const World& world, double timeout_seconds);

// --- A key-value rendezvous (TCPStore) for Env launches (store.cpp) ---
class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::string get(const std::string& key) = 0;  // waits up to the timeout
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;
  virtual std::chrono::milliseconds timeout() const = 0;
};
std::shared_ptr<Rendezvous> connect_tcp_store(const EnvRendezvous& env, double timeout_seconds);

// --- Gloo (gloo_backend.cpp / gloo_none.cpp) ---
std::unique_ptr<Communicator> make_gloo_communicator(const World& world, const std::shared_ptr<Rendezvous>& store,
                                                     double timeout_seconds);

// --- NCCL (nccl_backend.cpp / nccl_none.cpp); share_id sends rank 0's unique id to all ---
std::string nccl_library_version();  // "none" without NCCL
using ShareBytes = std::function<std::string(const std::string& bytes_on_root)>;
std::unique_ptr<Communicator> make_nccl_communicator(const World& world, const at::Device& device,
                                                     const ShareBytes& share_id, double timeout_seconds);

// --- Local (local_backend.cpp) ---
std::unique_ptr<Communicator> make_local_communicator(const World& world, const at::Device& device);

// Ends this process after its watchdog found a stalled or failed collective: logs "error on rank R
// of N (host H): reason", ends every rank through the backend and MPI where it can, else exits 1 so
// the launcher ends the others. Called from the watchdog thread while others may be blocked.
[[noreturn]] void end_job_from_watchdog(const World& world, const std::string& reason);
// The same when the watchdog is stuck in a call of its own: nothing of the backend is called again
// (it may be what blocks); MPI_Abort where MPI runs, and exit 1 (at the latest 10 s later).
[[noreturn]] void end_job_from_stuck_watchdog(const World& world, const std::string& reason);

// Runs blocking collectives on one background thread, in submission order, so a CPU backend gets
// asynchronous allreduce (overlap with backward) and its library is called from one thread at a time.
// With a watchdog, every job is watched under the name `what` (e.g. "MPI collective").
class CollectiveThread {
 public:
  explicit CollectiveThread(CollectiveWatchdog* watchdog = nullptr, std::string what = "collective");
  ~CollectiveThread();
  std::shared_ptr<Work> submit(std::function<void()> job);
  void run(std::function<void()> job) { submit(std::move(job))->wait(); }

 private:
  struct Job;
  void loop();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  CollectiveWatchdog* watchdog_;
  std::string what_;
  int64_t submitted_ = 0;
  std::thread thread_;
};

// Checks shared by the backends (errors name the rank and what was expected).
void check_contiguous(const std::vector<at::Tensor>& tensors, const Communicator& comm, const char* op);
void check_allreduce_args(const std::vector<at::Tensor>& tensors, ReduceOp op, const Communicator& comm);

}  // namespace sg2::dist
