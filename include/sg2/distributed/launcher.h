#pragma once
// stylegan2_launch: starts the ranks of one node, torchrun-style with a static rendezvous, and
// supervises them. No LibTorch here.
//
//   stylegan2_launch --nproc-per-node 2 -- stylegan2_train --config run.yaml
//
// Child i of node K gets RANK = K*N + i, LOCAL_RANK = i, WORLD_SIZE = M*N, LOCAL_WORLD_SIZE = N,
// NODE_RANK = K, MASTER_ADDR and MASTER_PORT on top of the launcher's environment (see world.h for
// the reading side). Each child runs in its own session, so a terminal's Ctrl-C reaches the
// launcher only and is forwarded once; signals to a child reach its whole process group.
//
// Supervision: when a child exits non-zero or is killed, the launcher names it, sends SIGTERM to
// the others, waits grace_seconds, then SIGKILLs what is left. SIGINT, SIGTERM and SIGHUP sent to
// the launcher are forwarded to the children with the same grace period. If the launcher itself
// dies, the kernel kills the children (PR_SET_PDEATHSIG).

#include <map>
#include <string>
#include <vector>

namespace sg2::dist {

struct LaunchOptions {
  int nproc_per_node = 1;                // N, --nproc-per-node
  int nnodes = 1;                        // M, --nnodes
  int node_rank = 0;                     // K, --node-rank
  std::string master_addr = "127.0.0.1";  // --master-addr
  int master_port = 29500;               // --master-port
  double grace_seconds = 10;             // --grace-seconds: from SIGTERM to SIGKILL
  std::string log_dir;                   // --log-dir: empty = children inherit stdout and stderr
  std::vector<std::string> command;      // program and arguments (after --); PATH is searched
};

// Throws sg2::Error naming the flag and what it expects.
void validate(const LaunchOptions& options);

// The variables that child `local_rank` gets, replacing inherited ones of the same names.
std::map<std::string, std::string> rank_environment(const LaunchOptions& options, int local_rank);

// Where child `rank` writes its stdout and stderr when log_dir is set: log_dir/rank_<rank>.log
// (appended to, so a resumed run keeps its log).
std::string rank_log_path(const std::string& log_dir, int rank);

// Validates, starts the children, supervises them until all have exited, and returns the exit code
// for the launcher: 0 if every child exited 0, otherwise the first failing child's exit code, or
// 128 + signal if it was killed. A child that cannot exec the program prints
// "cannot execute 'prog': <reason>" and exits 127. Throws sg2::Error for invalid options or when a
// child cannot be started (any already started are killed first). Blocks SIGINT, SIGTERM, SIGHUP
// and SIGCHLD in the calling thread while it runs; call it from the main thread (the children's
// death signal follows the thread that forked them).
int launch(const LaunchOptions& options);

}  // namespace sg2::dist
