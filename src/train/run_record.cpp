#include "sg2/train/run_record.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"
#include "sg2/device/cuda_device.h"
#include "sg2/distributed/communicator.h"

#include <torch/version.h>

#include <fstream>
#include <iterator>

#ifndef SG2_GIT_COMMIT
#define SG2_GIT_COMMIT "unknown"
#endif

namespace sg2::train {

namespace {

std::string cuda_version() {
  const CudaRuntimeInfo cuda = query_cuda_runtime();
  if (!cuda.compiled) return "none";
  return fmt::format("{}.{} runtime, driver {}", cuda.runtime_version / 1000, (cuda.runtime_version % 1000) / 10,
                     cuda.driver_version > 0 ? fmt::format("{}.{}", cuda.driver_version / 1000,
                                                           (cuda.driver_version % 1000) / 10)
                                             : std::string("none"));
}

}  // namespace

std::string source_commit() { return SG2_GIT_COMMIT; }

nlohmann::json library_versions() {
  nlohmann::json versions = {{"libtorch", TORCH_VERSION}, {"cuda", cuda_version()}};
  for (const auto& [name, version] : dist::communication_library_versions()) versions[name] = version;
  return versions;
}

nlohmann::json run_record(const RunStart& start) {
  return {{"timestamp", unix_time()},
          {"command_line", own_command_line()},
          {"git_commit", source_commit()},
          {"world_size", start.world_size},
          {"backend", start.backend},
          {"launcher", start.launcher},
          {"device", start.device},
          {"host", hostname()},
          {"resumed_from", start.resumed_from},
          {"versions", library_versions()}};
}

void append_run_record(const std::string& run_dir, const RunStart& start) {
  const std::string path = run_dir + "/run.jsonl";
  std::ofstream out(path, std::ios::app);
  out << run_record(start).dump() << "\n";
  SG2_CHECK(out.good(), "cannot append to '{}'", path);
}

}  // namespace sg2::train
