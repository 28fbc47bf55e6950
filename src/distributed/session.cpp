// The distributed session: finds the launch in the environment, bootstraps it and builds the
// communicator the config and device ask for.
#include "sg2/distributed/session.h"

#include "backends.h"

#include "sg2/core/error.h"
#include "sg2/core/logging.h"
#include "sg2/core/system.h"
#include "sg2/device/cuda_device.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <thread>

namespace sg2::dist {

namespace {

Session* g_active_session = nullptr;

ShareBytes share_over(Communicator* bootstrap_comm, const std::shared_ptr<Rendezvous>& store, int rank) {
  if (bootstrap_comm != nullptr) {
    return [bootstrap_comm](const std::string& bytes) { return bootstrap_comm->broadcast_bytes(bytes, 0); };
  }
  if (store != nullptr) {
    return [store, rank](const std::string& bytes) {
      if (rank == 0) store->set("sg2/nccl_unique_id", bytes);
      return store->get("sg2/nccl_unique_id");
    };
  }
  return [](const std::string& bytes) { return bytes; };
}

// A CUDA-aware MPI creates its context on the current device in MPI_Init: make that the rank's own
// GPU first (by the local rank the launcher states), not GPU 0 on every rank.
void select_device_before_mpi_init(const CommunicatorOptions& options) {
  const int local_rank = local_rank_before_mpi_init();
  if (!options.device_for || local_rank < 0) return;
  World provisional;
  provisional.local_rank = local_rank;
  const at::Device device = options.device_for(provisional);
  if (device.is_cuda()) select_cuda_device(device.index());
}

}  // namespace

Backend Session::resolve_backend(Backend requested, Launcher launcher, const at::Device& device, int world_size) {
  if (requested != Backend::Auto) return requested;
  if (world_size == 1) return Backend::Local;  // nothing to reduce, on any device
  if (device.is_cuda()) return Backend::Nccl;
  if (launcher == Launcher::Mpi) return Backend::Mpi;
  if (launcher == Launcher::Env) return Backend::Gloo;
  return Backend::Local;
}

std::vector<std::pair<std::string, std::string>> communication_library_versions() {
  return {{"mpi", mpi_library_version()}, {"nccl", nccl_library_version()}};
}

namespace {

void log_rank_error(const World& world, const std::string& reason) {
  log_fatal_error(fmt::format("error on rank {} of {} (host {}): {}", world.rank, world.size, hostname(), reason));
}

// The communicator of the backend that `options` ask for, over the launch's world (MPI's, already
// initialised, or the TCPStore rendezvous of the Env launch).
std::unique_ptr<Communicator> connect_world(Launcher launcher, World world, CommunicatorOptions options) {
  std::shared_ptr<Rendezvous> store;
  std::unique_ptr<Communicator> mpi_comm;
  if (launcher == Launcher::Mpi) {
    mpi_comm = make_mpi_communicator(world, options.timeout_seconds);
  } else if (launcher == Launcher::Env) {
    const EnvRendezvous env = read_env_rendezvous();
    world = env.world;
    store = connect_tcp_store(env, options.timeout_seconds);
  }
  if (options.device_for) options.device = options.device_for(world);
  const Backend backend = Session::resolve_backend(options.backend, launcher, options.device, world.size);
  SG2_CHECK(backend != Backend::Mpi || launcher == Launcher::Mpi,
            "dist.backend = mpi, but this process was not launched by mpirun or srun ({})", to_string(launcher));
  SG2_CHECK(backend != Backend::Gloo || store != nullptr,
            "dist.backend = gloo needs the stylegan2_launch environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
  SG2_CHECK(!options.device.is_cuda() || backend == Backend::Nccl || backend == Backend::Local,
            "dist.backend = {} reduces CPU tensors, but run.device is {}: use dist.backend = nccl", name_of(backend),
            options.device.str());
  if (backend == Backend::Mpi) return mpi_comm;
  if (backend == Backend::Nccl) {
    return make_nccl_communicator(world, options.device, share_over(mpi_comm.get(), store, world.rank),
                                  options.timeout_seconds);
  }
  if (backend == Backend::Gloo) return make_gloo_communicator(world, store, options.timeout_seconds);
  return make_local_communicator(world, options.device);
}

}  // namespace

std::unique_ptr<Session> Session::start(const CommunicatorOptions& options) {
  std::unique_ptr<Session> session(new Session());
  const Launcher launcher = detect_launcher();
  World world;
  if (launcher == Launcher::Mpi) {
    select_device_before_mpi_init(options);
    world = mpi_init_world();
    session->finalize_mpi_ = true;
  }
  try {
    session->comm_ = connect_world(launcher, world, options);
  } catch (const std::exception& e) {
    // ~Session's MPI_Finalize would wait for the other ranks, and they for this one: end them all.
    if (session->finalize_mpi_ && world.size > 1) {
      log_rank_error(world, e.what());
      mpi_abort_world(1);
    }
    throw;
  }
  g_active_session = session.get();
  return session;
}

Session::~Session() {
  if (g_active_session == this) g_active_session = nullptr;
  comm_.reset();
  if (finalize_mpi_) mpi_finalize();
}

Session* active_session() { return g_active_session; }

void end_job_from_watchdog(const World& world, const std::string& reason) {
  log_rank_error(world, reason);
  abort_job(reason);  // the backend's abort; launched by MPI: MPI_Abort ends every rank
  std::_Exit(1);      // otherwise the launcher (stylegan2_launch, torchrun, srun) ends the others
}

void end_job_from_stuck_watchdog(const World& world, const std::string& reason) {
  log_rank_error(world, reason);
  std::thread([] {  // MPI_Abort may block as well: the process ends regardless
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::_Exit(1);
  }).detach();
  mpi_abort_world(1);
  std::_Exit(1);
}

void abort_job(const std::string& reason) noexcept {
  Session* session = g_active_session;
  if (session == nullptr || session->world().size == 1) return;
  session->comm().abort(reason);
  mpi_abort_world(1);  // an MPI launch with another backend still ends every rank through MPI
}

}  // namespace sg2::dist
