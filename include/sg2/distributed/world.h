#pragma once
// Where this process sits in the job, and how it was launched. No LibTorch here.
//
//   mpirun / srun (MPI)   -> rank and size from MPI, local rank from MPI_Comm_split_type(SHARED)
//   stylegan2_launch      -> RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   plain process         -> rank 0 of 1
//
// The device is chosen by local rank, never by global rank.

#include <string>

namespace sg2::dist {

enum class Launcher { Single, Mpi, Env };
std::string to_string(Launcher launcher);

struct World {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  Launcher launcher = Launcher::Single;
  bool is_root() const { return rank == 0; }
  std::string describe() const;  // "rank 1 of 4 (local 1 of 2, launched by mpi)"
};

// How the environment says this process was started: RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
// (stylegan2_launch, torchrun) -> Env, even where MPI variables are set too: those are a launcher's
// own, started one per node by mpirun or srun --mpi=pmix. Else Open MPI / PMI / PMIx variables ->
// Mpi, RANK + WORLD_SIZE alone -> Env (with a local master), none -> Single. Throws for none inside an
// srun step of several tasks (srun without an MPI plugin: every task would be rank 0 of 1).
Launcher detect_launcher();

// This process's rank on its node as an MPI launcher states it before MPI_Init (Open MPI, MVAPICH,
// MPICH / Intel MPI, Slurm's srun), or -1 when none does.
int local_rank_before_mpi_init();

// The rendezvous of an Env launch, read and checked from the environment (errors name the variable).
struct EnvRendezvous {
  World world;
  std::string master_addr;
  int master_port = 0;
  // torchrun's agent already serves a TCPStore on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True):
  // every rank connects as a client, under a key prefix of the agent's restart count.
  bool agent_store = false;
  int restart_count = 0;  // TORCHELASTIC_RESTART_COUNT
};
EnvRendezvous read_env_rendezvous();

}  // namespace sg2::dist
