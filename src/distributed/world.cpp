#include "sg2/distributed/world.h"

#include "sg2/core/error.h"

#include <cstdlib>
#include <string>

namespace sg2::dist {

namespace {

const char* env(const char* name) { return std::getenv(name); }

int env_int(const char* name, int min_value, int max_value) {
  const char* text = env(name);
  SG2_CHECK(text != nullptr, "environment variable {} is not set (expected from stylegan2_launch or torchrun)", name);
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  SG2_CHECK(end != text && *end == '\0' && value >= min_value && value <= max_value,
            "environment variable {}='{}': expected an integer in [{}, {}]", name, text, min_value, max_value);
  return static_cast<int>(value);
}

// srun without an MPI plugin (--mpi=none, or MpiDefault=none in slurm.conf) starts its tasks with no
// process manager that MPI could find: each would train alone as rank 0 of 1, all into one run
// directory. srun states the step's task count in SLURM_STEP_NUM_TASKS (not set in a batch script).
void check_not_a_bare_srun_step() {
  const char* tasks = env("SLURM_STEP_NUM_TASKS");
  if (tasks == nullptr || std::string(tasks) == "1") return;
  const char* task = env("SLURM_PROCID");
  SG2_FAIL("srun started this process as task {} of {} (SLURM_PROCID, SLURM_STEP_NUM_TASKS) without an MPI plugin: "
           "none of OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK or RANK + WORLD_SIZE is set, so every task would "
           "train alone as rank 0 of 1. Launch with srun --mpi=pmix (srun --mpi=list shows the plugins), with "
           "mpirun inside the allocation, or with scripts/slurm/train.sbatch",
           task ? task : "?", tasks);
}

}  // namespace

std::string to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::Single: return "single process";
    case Launcher::Mpi: return "mpi";
    case Launcher::Env: return "env (stylegan2_launch)";
  }
  return "?";
}

std::string World::describe() const {
  return fmt::format("rank {} of {} (local {} of {}, launcher: {})", rank, size, local_rank, local_size,
                     to_string(launcher));
}

Launcher detect_launcher() {
  const bool rank_variables = env("RANK") != nullptr && env("WORLD_SIZE") != nullptr;
  if (rank_variables && env("MASTER_ADDR") != nullptr && env("MASTER_PORT") != nullptr) return Launcher::Env;
  // Open MPI's mpirun, PMI-1/2 (srun --mpi=pmi2, MPICH), PMIx (srun --mpi=pmix).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (env(name) != nullptr) return Launcher::Mpi;
  }
  if (rank_variables) return Launcher::Env;
  check_not_a_bare_srun_step();
  return Launcher::Single;
}

int local_rank_before_mpi_init() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (env(name) != nullptr) return env_int(name, 0, 1 << 20);
  }
  return -1;
}

EnvRendezvous read_env_rendezvous() {
  EnvRendezvous r;
  r.world.launcher = Launcher::Env;
  r.world.size = env_int("WORLD_SIZE", 1, 1 << 20);
  r.world.rank = env_int("RANK", 0, r.world.size - 1);
  r.world.local_rank = env("LOCAL_RANK") ? env_int("LOCAL_RANK", 0, r.world.size - 1) : r.world.rank;
  r.world.local_size = env("LOCAL_WORLD_SIZE") ? env_int("LOCAL_WORLD_SIZE", 1, r.world.size) : r.world.size;
  SG2_CHECK(r.world.local_rank < r.world.local_size, "LOCAL_RANK={} must be below LOCAL_WORLD_SIZE={}",
            r.world.local_rank, r.world.local_size);
  r.master_addr = env("MASTER_ADDR") ? env("MASTER_ADDR") : "127.0.0.1";
  r.master_port = env("MASTER_PORT") ? env_int("MASTER_PORT", 1, 65535) : 29500;
  const char* agent_store = env("TORCHELASTIC_USE_AGENT_STORE");
  r.agent_store = agent_store != nullptr && (std::string(agent_store) == "True" || std::string(agent_store) == "1");
  r.restart_count = env("TORCHELASTIC_RESTART_COUNT") ? env_int("TORCHELASTIC_RESTART_COUNT", 0, 1 << 20) : 0;
  return r;
}

}  // namespace sg2::dist
