#include "sg2/bench/bench_record.h"

#include "sg2/bench/kernel_profile.h"
#include "sg2/core/error.h"
#include "sg2/train/run_record.h"

#include <fstream>

namespace sg2::bench {

namespace {

std::string mode_name(BenchMode mode) { return mode == BenchMode::Distributed ? "distributed" : "compute_alone"; }

nlohmann::json bucket_record(const std::vector<int64_t>& bytes, const std::vector<double>& launch) {
  return {{"bytes", bytes}, {"launch_fraction", launch}};
}

}  // namespace

nlohmann::json training_bench_record(const BenchResult& r, const Trainer& trainer, const BenchLaunch& launch) {
  const auto& config = trainer.config();
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) {
    phases.push_back({{"name", p.name}, {"every", p.interval}, {"s", p.seconds}, {"host_s", p.host_seconds}});
  }
  const double img_per_s = static_cast<double>(launch.global_batch) / r.step_seconds;
  const KernelKinds kinds = split_by_kind(r.kernel_seconds);
  const bool profiled = kinds.matrix_seconds + kinds.other_seconds > 0;
  return {{"kind", "train"},
          {"mode", mode_name(launch.mode)},
          {"ranks", launch.ranks},
          {"nodes", launch.nodes},
          {"backend", launch.backend},
          {"overlap", config.dist.overlap},
          {"bucket_mb", config.dist.bucket_mb},
          {"preset", config.run.preset},
          {"resolution", trainer.dataset().resolution()},
          {"device", trainer.device().str()},
          {"precision", nn::describe_precision(trainer.G().options, trainer.D().options)},
          {"augment", config.augment.mode == train::AugmentMode::NoAug
                          ? nlohmann::json(nullptr)
                          : nlohmann::json{{"mode", name_of(config.augment.mode)},
                                           {"pipe", config.augment.pipe},
                                           {"p", config.augment.p}}},
          {"global_batch", launch.global_batch},
          {"rank_batch", r.batch},
          {"batch_gpu", train::batch_per_round(config, launch.mode == BenchMode::ComputeAlone ? 1 : launch.ranks)},
          {"timed_steps", r.timed_steps},
          {"step_s", r.step_seconds},
          {"host_s_per_step", r.step_host_seconds},
          {"data_wait_s_per_step", r.step_data_wait_seconds},
          {"img_per_s", img_per_s},
          {"s_per_kimg", 1000.0 / img_per_s},
          {"phases", phases},
          {"allreduce",
           {{"busy_s", r.step_allreduce.busy_seconds},
            {"exposed_s", r.step_allreduce.exposed_seconds},
            {"bytes", r.step_allreduce.bytes},
            {"measured", launch.allreduce_measured}}},
          {"buckets",
           {{"G", bucket_record(r.G_bucket_bytes, r.G_bucket_launch)},
            {"D", bucket_record(r.D_bucket_bytes, r.D_bucket_launch)}}},
          {"device_kernels", profiled ? nlohmann::json{{"matrix_s", kinds.matrix_seconds},
                                                       {"other_s", kinds.other_seconds}}
                                      : nlohmann::json(nullptr)},
          {"peak_rss_gib", r.peak_rss_gib},
          {"peak_device_gib", r.peak_device_gib},
          {"git_commit", train::source_commit()}};
}

nlohmann::json comm_bench_record(const std::vector<dist::CommBenchRow>& rows, const dist::Communicator& comm) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : rows) {
    out.push_back({{"label", row.label},
                   {"bytes", row.bytes},
                   {"seconds", row.seconds},
                   {"algbw_GBps", row.algbw_gbps},
                   {"busbw_GBps", row.busbw_gbps},
                   {"verified", row.verified},
                   {"size_sweep", row.in_size_sweep}});
  }
  return {{"kind", "comm"},
          {"ranks", comm.size()},
          {"nodes", comm.size() / std::max(1, comm.world().local_size)},
          {"backend", comm.backend()},
          {"rows", out},
          {"git_commit", train::source_commit()}};
}

void append_json_line(const std::string& path, const nlohmann::json& record) {
  std::ofstream out(path, std::ios::app);
  SG2_CHECK(out.good(), "--jsonl {}: cannot open it for appending", path);
  out << record.dump() << "\n";
  out.flush();
  SG2_CHECK(out.good(), "--jsonl {}: writing the record failed (disk full?)", path);
}

at::Tensor values_of_every_rank(const std::vector<double>& values, dist::Communicator& comm) {
  return comm.allgather(at::tensor(values, at::kDouble).to(comm.device())).cpu();
}

void keep_slowest_rank(BenchResult& result, dist::Communicator& comm) {
  std::vector<double> seconds{result.step_seconds};
  for (const auto& phase : result.phases) seconds.push_back(phase.seconds);
  const at::Tensor slowest = std::get<0>(values_of_every_rank(seconds, comm).max(0));  // [1 + phases]
  const auto* values = slowest.data_ptr<double>();
  result.step_seconds = values[0];
  for (size_t i = 0; i < result.phases.size(); ++i) result.phases[i].seconds = values[i + 1];
}

}  // namespace sg2::bench
