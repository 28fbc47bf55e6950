#pragma once
// What a run directory records about each start of the run (run.jsonl, one line per start, new or
// resumed): the command line, the git commit of the source the binary was built from, the world
// (size, backend, launcher, device) and the library versions (LibTorch, CUDA, NCCL, MPI).

#include <nlohmann/json.hpp>

#include <string>

namespace sg2::train {

// {"libtorch": "1.13.0", "cuda": "12.4 runtime" or "none", "nccl": ..., "mpi": ...}
nlohmann::json library_versions();

// "<12 hex digits>[-dirty]" of the tree the binary was configured from, or "unknown".
std::string source_commit();

struct RunStart {
  int world_size = 1;
  std::string backend, launcher, device;
  std::string resumed_from;  // snapshot path, empty for a new run
};

nlohmann::json run_record(const RunStart& start);
void append_run_record(const std::string& run_dir, const RunStart& start);

}  // namespace sg2::train
