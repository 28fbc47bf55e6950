#include "sg2/train/run_dir.h"

#include "sg2/core/error.h"
#include "sg2/data/atomic_file.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

namespace sg2::train {

namespace fs = std::filesystem;

namespace {

// Leading run id of a directory name "00012-desc", or -1.
int64_t run_id(const std::string& name) {
  static const std::regex pattern("^(\\d{5,})-.*");
  std::smatch match;
  return std::regex_match(name, match, pattern) ? std::stoll(match[1]) : -1;
}

// Image count of "network-snapshot-000123.pt", or -1.
int64_t snapshot_kimg(const std::string& name) {
  static const std::regex pattern("^network-snapshot-(\\d+)\\.pt$");
  std::smatch match;
  return std::regex_match(name, match, pattern) ? std::stoll(match[1]) : -1;
}

}  // namespace

std::string create_run_dir(const std::string& outdir, const std::string& desc) {
  fs::create_directories(outdir);
  int64_t next = 0;
  for (const auto& entry : fs::directory_iterator(outdir)) {
    if (entry.is_directory()) next = std::max(next, run_id(entry.path().filename().string()) + 1);
  }
  const fs::path dir = fs::path(outdir) / fmt::format("{:05d}-{}", next, desc);
  SG2_CHECK(fs::create_directory(dir), "run directory '{}' already exists", dir.string());
  return dir.string();
}

std::string snapshot_name(int64_t cur_nimg) { return fmt::format("network-snapshot-{:06d}.pt", cur_nimg / 1000); }

std::string latest_snapshot_in(const std::string& run_dir) {
  std::string best;
  int64_t best_kimg = -1;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(run_dir, error)) {
    const int64_t kimg = snapshot_kimg(entry.path().filename().string());
    if (kimg > best_kimg) {
      best_kimg = kimg;
      best = entry.path().string();
    }
  }
  return best;
}

int trim_stats_after(const std::string& stats_path, int64_t cur_nimg) {
  std::ifstream in(stats_path);
  std::string kept;
  int dropped = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json tick = nlohmann::json::parse(line, nullptr, false);
    const bool whole = !tick.is_discarded() && tick.contains("Progress/kimg");
    if (whole && tick["Progress/kimg"].value("mean", 0.0) * 1000 <= double(cur_nimg) + 0.5) {
      kept += line + "\n";
    } else {
      ++dropped;
    }
  }
  if (dropped > 0) data::write_file_atomically(stats_path, kept.data(), kept.size());
  return dropped;
}

std::string resolve_resume(const std::string& spec, const std::string& outdir) {
  if (spec == "latest") {
    SG2_CHECK(fs::is_directory(outdir), "--resume latest: run.outdir '{}' does not exist", outdir);
    std::vector<std::pair<int64_t, std::string>> runs;
    for (const auto& entry : fs::directory_iterator(outdir)) {
      const int64_t id = run_id(entry.path().filename().string());
      if (entry.is_directory() && id >= 0) runs.emplace_back(id, entry.path().string());
    }
    std::sort(runs.rbegin(), runs.rend());
    for (const auto& [id, dir] : runs) {
      std::string snapshot = latest_snapshot_in(dir);
      if (!snapshot.empty()) return snapshot;
    }
    SG2_FAIL("--resume latest: no run directory under '{}' holds a snapshot", outdir);
  }
  if (fs::is_directory(spec)) {
    std::string snapshot = latest_snapshot_in(spec);
    SG2_CHECK(!snapshot.empty(), "--resume '{}': the directory holds no network-snapshot-*.pt", spec);
    return snapshot;
  }
  SG2_CHECK(fs::is_regular_file(spec), "--resume '{}': no such snapshot file or run directory", spec);
  return fs::absolute(spec).lexically_normal().string();
}

}  // namespace sg2::train
