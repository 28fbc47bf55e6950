#pragma once
// The process's distributed session: the launch found in the environment (MPI, a TCPStore
// rendezvous of stylegan2_launch / torchrun / srun), bootstrapped once, and the communicator it owns;
// and ending every rank after a fatal error on one.

#include "sg2/core/enum_names.h"
#include "sg2/distributed/communicator.h"

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>

namespace sg2::dist {

// dist.backend; Auto: local for one process, else nccl on CUDA, mpi under mpirun/srun, gloo under
// stylegan2_launch.
enum class Backend { Auto, Nccl, Mpi, Gloo, Local };
inline constexpr EnumNames<Backend, 5> kBackendNames{{{Backend::Auto, "auto"},
                                                      {Backend::Nccl, "nccl"},
                                                      {Backend::Mpi, "mpi"},
                                                      {Backend::Gloo, "gloo"},
                                                      {Backend::Local, "local"}}};
constexpr const auto& enum_names(Backend) { return kBackendNames; }  // config fields by name

// The part of the options a training config sets (its dist.backend and dist.timeout).
struct CommunicatorSettings {
  Backend backend = Backend::Auto;
  double timeout_seconds = 600;  // collectives and rendezvous that take longer fail the job
};

struct CommunicatorOptions : CommunicatorSettings {
  at::Device device = at::Device(at::kCPU);  // the training device; auto picks nccl for CUDA
  // When set, picks the device once the world is known (by local rank); overrides `device`.
  std::function<at::Device(const World&)> device_for;
};

// The process's distributed session: bootstraps the launch found in the environment (MPI init,
// TCPStore rendezvous) and owns the communicator. One per process; MPI is finalized on destruction.
class Session {
 public:
  static std::unique_ptr<Session> start(const CommunicatorOptions& options);
  ~Session();
  const World& world() const { return comm_->world(); }
  Communicator& comm() { return *comm_; }

  // Which backend `auto` resolves to for this launch, device and world size (one process: local).
  static Backend resolve_backend(Backend requested, Launcher launcher, const at::Device& device, int world_size);

 private:
  Session() = default;
  std::unique_ptr<Communicator> comm_;
  bool finalize_mpi_ = false;
};

// The session started last in this process (null before), for error paths that must end the job.
Session* active_session();

// Ends every rank after a fatal error on this one: the backend's abort when the job has several
// ranks (MPI_Abort kills all); a no-op for a single process. Never throws.
void abort_job(const std::string& reason) noexcept;

}  // namespace sg2::dist
