#pragma once
// The communication benchmark behind `stylegan2_bench comm` (after nccl-tests): a table of the ranks
// (host, pid, device), then the allreduce (sum) of each message size, every result verified against
// its closed form before timing, reported as the slowest rank's time per call, algorithm bandwidth
// (bytes / time) and bus bandwidth (algbw x 2(n-1)/n), and a summary: wrong results, average busbw.

#include "sg2/distributed/communicator.h"

#include <string>
#include <vector>

namespace sg2::dist {

struct CommBenchOptions {
  int64_t min_bytes = 4;
  int64_t max_bytes = 64 << 20;
  int64_t step_factor = 4;
  int warmup = 3;
  int iterations = 20;
  at::ScalarType dtype = at::kFloat;
};

struct CommBenchRow {
  std::string label;    // the size, or "bucket i" / "step" for a bucket layout
  int64_t bytes = 0;    // per rank
  double seconds = 0;   // per call, the slowest rank's
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  bool verified = false;
  bool in_size_sweep = false;  // a row of run_size_sweep (the rows "avg busbw" averages, as nccl-tests)
};

// Times one allreduce per size from min_bytes to max_bytes (x step_factor). Collective.
std::vector<CommBenchRow> run_size_sweep(Communicator& comm, const CommBenchOptions& options);

// Times the buckets of a gradient layout (element counts) as a training step sends them: all
// launched asynchronously, then waited for. One row per bucket alone, then one for the whole step.
std::vector<CommBenchRow> run_bucket_layout(Communicator& comm, const std::vector<int64_t>& bucket_numels,
                                            const CommBenchOptions& options);

// "#  rank 0  host h  pid p  device cpu" per rank, on every rank. Collective.
std::string gather_rank_table(Communicator& comm);

std::string format_comm_bench(const std::vector<CommBenchRow>& rows, const Communicator& comm);

}  // namespace sg2::dist
