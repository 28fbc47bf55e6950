#pragma once
// Benchmark results as JSON lines (stylegan2_bench --jsonl FILE): one object per run, appended by
// rank 0, for scripts (scripts/bench/scaling_study, scripts/bench/scaling_model). The tables the
// bench prints are for people; scripts read these records.

#include "sg2/bench/benchmark.h"
#include "sg2/distributed/comm_benchmark.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace sg2::bench {

// How the timed ranks ran: together with the gradient allreduce, or each alone on its own share of
// the global batch (the compute term of the scaling model).
enum class BenchMode { Distributed, ComputeAlone };

struct BenchLaunch {
  BenchMode mode = BenchMode::Distributed;
  int ranks = 1;
  int nodes = 1;           // ranks / ranks a node (the launcher's local world)
  std::string backend;     // the gradient allreduce's ("local" when computing alone)
  int64_t global_batch = 0;
  bool allreduce_measured = true;  // the host waits for the collectives, so their times are measured
};

// {"kind": "train", "mode", "ranks", "nodes", "backend", "preset", "resolution", "device", "precision",
//  "global_batch", "rank_batch" (train.batch of the run: the global batch unless computing alone),
//  "batch_gpu" (images a process and round), "step_s", "host_s_per_step" (until the host had issued
//  a step), "img_per_s", "s_per_kimg", "phases": [{"name", "every", "s", "host_s"}], "allreduce":
//  {"busy_s", "exposed_s", "bytes", "measured"}, "buckets": {"G": {"bytes", "launch_fraction"}, "D":
//  ...}, "device_kernels": {"matrix_s", "other_s"} (--device-kernels on CUDA; else null),
//  "peak_rss_gib", "peak_device_gib"}; img/s and s/kimg of the global batch.
nlohmann::json training_bench_record(const BenchResult& result, const Trainer& trainer, const BenchLaunch& launch);

// {"kind": "comm", "ranks", "backend", "rows": [{"label", "bytes", "seconds", "algbw_GBps", "busbw_GBps",
//  "verified", "size_sweep"}]}.
nlohmann::json comm_bench_record(const std::vector<dist::CommBenchRow>& rows, const dist::Communicator& comm);

// Appends `record` as one line to `path` (created if missing); an error names the file.
void append_json_line(const std::string& path, const nlohmann::json& record);

// Every rank's `values`, as [ranks, values.size()] on the host (collective).
at::Tensor values_of_every_rank(const std::vector<double>& values, dist::Communicator& comm);

// Every rank's phase and step times replaced by the slowest rank's (collective): a compute-alone
// run's step is its slowest rank's, as the gradient allreduce would make every rank wait for it.
void keep_slowest_rank(BenchResult& result, dist::Communicator& comm);

}  // namespace sg2::bench
