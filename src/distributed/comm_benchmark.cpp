#include "sg2/distributed/comm_benchmark.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/core/timer.h"

#include <unistd.h>

#include <cmath>
#include <cstring>

namespace sg2::dist {

namespace {

// The backend's work is done once a host copy of a result exists (CUDA: after the stream's work).
void settle(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) (void)t.narrow(0, 0, 1).cpu();
}

// Rank-filled tensors: element i = (rank + 1) * (i % 3 + 1); the sum is (n(n+1)/2) * (i % 3 + 1).
at::Tensor rank_filled(const Communicator& comm, int64_t numel, at::ScalarType dtype) {
  return at::arange(numel, at::kLong).remainder(3).add(1).mul(comm.rank() + 1).to(dtype).to(comm.device());
}

// To the nanosecond, through the communicator's integer maximum.
double slowest_rank(Communicator& comm, double seconds) {
  return static_cast<double>(comm.max_over_ranks(std::llround(seconds * 1e9))) * 1e-9;
}

bool verify(Communicator& comm, const std::vector<at::Tensor>& tensors) {
  const int64_t factor = int64_t(comm.size()) * (comm.size() + 1) / 2;
  bool ok = true;
  for (const auto& t : tensors) {
    const at::Tensor expected = at::arange(t.numel(), at::kLong).remainder(3).add(1).mul(factor).to(at::kDouble);
    ok = ok && at::allclose(t.cpu().to(at::kDouble), expected, 1e-3, 0);
  }
  return !comm.any(!ok);  // every rank's results are right
}

CommBenchRow time_allreduce(Communicator& comm, const std::vector<at::Tensor>& tensors, std::string label,
                            const CommBenchOptions& o) {
  CommBenchRow row;
  row.label = std::move(label);
  for (const auto& t : tensors) row.bytes += t.numel() * static_cast<int64_t>(t.element_size());
  comm.allreduce(tensors, ReduceOp::Sum);
  row.verified = verify(comm, tensors);
  for (const auto& t : tensors) t.zero_();  // timing on zeros keeps every value finite
  auto run_once = [&] {
    std::vector<std::shared_ptr<Work>> works;
    for (const auto& t : tensors) works.push_back(comm.allreduce_async({t}, ReduceOp::Sum));
    for (const auto& w : works) w->wait();
  };
  for (int i = 0; i < o.warmup; ++i) run_once();
  settle(tensors);
  comm.barrier();
  const Stopwatch watch;
  for (int i = 0; i < o.iterations; ++i) run_once();
  settle(tensors);
  row.seconds = slowest_rank(comm, watch.seconds() / std::max(o.iterations, 1));
  const int n = comm.size();
  row.algbw_gbps = row.bytes / row.seconds / 1e9;
  row.busbw_gbps = row.algbw_gbps * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
  return row;
}

}  // namespace

std::vector<CommBenchRow> run_size_sweep(Communicator& comm, const CommBenchOptions& o) {
  SG2_CHECK(o.min_bytes > 0 && o.max_bytes >= o.min_bytes && o.step_factor >= 2 && o.iterations >= 1,
            "comm bench: need 0 < --min-bytes <= --max-bytes, --step-factor >= 2 and --iters >= 1");
  const int64_t element = c10::elementSize(o.dtype);
  SG2_CHECK(o.min_bytes % element == 0,
            "comm bench: --min-bytes {} is not a whole number of {}-byte elements: give a multiple of {}, e.g. {}",
            o.min_bytes, element, element, (o.min_bytes + element - 1) / element * element);
  std::vector<CommBenchRow> rows;
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
    const int64_t numel = std::max<int64_t>(1, bytes / element);
    rows.push_back(time_allreduce(comm, {rank_filled(comm, numel, o.dtype)}, std::to_string(numel * element), o));
    rows.back().in_size_sweep = true;
  }
  return rows;
}

std::vector<CommBenchRow> run_bucket_layout(Communicator& comm, const std::vector<int64_t>& numels,
                                            const CommBenchOptions& o) {
  std::vector<CommBenchRow> rows;
  std::vector<at::Tensor> buckets;
  for (size_t i = 0; i < numels.size(); ++i) {
    buckets.push_back(rank_filled(comm, numels[i], o.dtype));
    rows.push_back(time_allreduce(comm, {buckets.back()}, "bucket " + std::to_string(i), o));
  }
  for (auto& b : buckets) b.copy_(rank_filled(comm, b.numel(), o.dtype));
  rows.push_back(time_allreduce(comm, buckets, "step", o));
  return rows;
}

std::string gather_rank_table(Communicator& comm) {
  constexpr int64_t kLineBytes = 160;
  std::string line = fmt::format("#  rank {:>4}  host {}  pid {}  device {}", comm.rank(), hostname(), getpid(),
                                 comm.device().str());
  line.resize(kLineBytes, ' ');
  at::Tensor mine = at::empty({kLineBytes}, at::kByte);
  std::memcpy(mine.data_ptr(), line.data(), kLineBytes);
  const at::Tensor all = comm.allgather(mine.to(comm.device())).cpu().contiguous();  // [size, kLineBytes]
  std::string table;
  for (int r = 0; r < comm.size(); ++r) {
    std::string row(reinterpret_cast<const char*>(all[r].data_ptr()), kLineBytes);
    table += row.substr(0, row.find_last_not_of(' ') + 1) + "\n";
  }
  return table;
}

std::string format_comm_bench(const std::vector<CommBenchRow>& rows, const Communicator& comm) {
  std::string out = fmt::format("# allreduce (sum), backend {}, {} ranks, device {}\n", comm.backend(), comm.size(),
                                comm.device().str());
  out += fmt::format("{:>12} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "what", "bytes", "time_us", "algbw_GB/s",
                     "busbw_GB/s", "check");
  int wrong = 0;
  int sweep_rows = 0;
  double sweep_busbw_sum = 0;
  for (const auto& r : rows) {
    out += fmt::format("{:>12} {:>12} {:>12.1f} {:>12.3f} {:>12.3f} {:>8}\n", r.label, r.bytes, r.seconds * 1e6,
                       r.algbw_gbps, r.busbw_gbps, r.verified ? "ok" : "WRONG");
    wrong += r.verified ? 0 : 1;
    if (!r.in_size_sweep) continue;
    sweep_busbw_sum += r.busbw_gbps;
    ++sweep_rows;
  }
  out += fmt::format("# wrong results: {} of {}{}\n", wrong, rows.size(), wrong == 0 ? " (every result verified)" : "");
  out += fmt::format("# avg busbw: {:.3f} GB/s over the {} sizes of the sweep\n",
                     sweep_rows == 0 ? 0.0 : sweep_busbw_sum / sweep_rows, sweep_rows);
  return out;
}

}  // namespace sg2::dist
