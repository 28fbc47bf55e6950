#include "sg2/train/run_dir.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/system.h"
#include "sg2/data/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
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

// Images shown of "network-snapshot-000123.pt" (123,000) or "network-snapshot-000000.512.pt" (512), or -1.
int64_t snapshot_nimg(const std::string& name) {
  static const std::regex pattern("^network-snapshot-(\\d+)(?:\\.(\\d{3}))?\\.pt$");
  std::smatch match;
  if (!std::regex_match(name, match, pattern) || match[1].length() > 12) return -1;
  return std::stoll(match[1]) * 1000 + (match[2].matched ? std::stoll(match[2]) : 0);
}

}  // namespace

std::string create_run_dir(const std::string& outdir, const std::string& desc) {
  create_output_directory(outdir, "the output directory (--outdir)");
  int64_t next = 0;
  for (const auto& entry : fs::directory_iterator(outdir)) {
    if (entry.is_directory()) next = std::max(next, run_id(entry.path().filename().string()) + 1);
  }
  const fs::path dir = fs::path(outdir) / fmt::format("{:05d}-{}", next, desc);
  SG2_CHECK(fs::create_directory(dir), "run directory '{}' already exists", dir.string());
  return dir.string();
}

std::string kimg_label(int64_t cur_nimg, int64_t previous_tick_nimg) {
  const int64_t kimg = cur_nimg / 1000, images = cur_nimg % 1000;
  const bool first_in_its_kimg = previous_tick_nimg < 0 || previous_tick_nimg / 1000 < kimg;
  return first_in_its_kimg || images == 0 ? fmt::format("{:06d}", kimg) : fmt::format("{:06d}.{:03d}", kimg, images);
}

std::string snapshot_name(int64_t cur_nimg, int64_t previous_tick_nimg) {
  return "network-snapshot-" + kimg_label(cur_nimg, previous_tick_nimg) + ".pt";
}

std::string latest_snapshot_in(const std::string& run_dir) {
  std::string best;
  int64_t best_nimg = -1;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(run_dir, error)) {
    const int64_t nimg = snapshot_nimg(entry.path().filename().string());
    if (nimg > best_nimg) {
      best_nimg = nimg;
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
  SG2_CHECK(fs::path(spec).extension() != ".pkl", "--resume '{}': a network pickle is not a snapshot: import it "
            "first. One of the original TensorFlow StyleGAN2 (or of stylegan2_export): stylegan2_import --pkl {} --out "
            "NAME-snapshot.pt; one of stylegan2-ada-pytorch: python3 scripts/export_pkl.py --pkl {} --out NAME, then "
            "stylegan2_import --state-dict NAME.pt --config NAME.json --out NAME-snapshot.pt. Then --resume "
            "NAME-snapshot.pt (docs/augmentation.md, \"Transfer learning\")", spec, spec, spec);
  return fs::absolute(spec).lexically_normal().string();
}

RunDirLock::RunDirLock(const std::string& run_dir) {
  const std::string path = run_dir + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  SG2_CHECK(fd_ >= 0, "cannot open '{}' to lock the run directory: {}", path, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    std::string holder(256, '\0');
    const ssize_t n = ::pread(fd_, holder.data(), holder.size(), 0);
    holder.resize(n > 0 ? static_cast<size_t>(n) : 0);
    ::close(fd_);
    fd_ = -1;
    SG2_CHECK(error != EWOULDBLOCK, "run directory '{}' is in use by another run ({}): wait for it to end, or "
              "resume a copy of its snapshot into another --outdir", run_dir, holder.empty() ? "pid unknown" : holder);
    SG2_FAIL("cannot lock '{}': {}", path, std::strerror(error));
  }
  const std::string me = fmt::format("pid {} on {}", ::getpid(), hostname());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    spdlog::warn("could not write the holder into '{}': {}", path, std::strerror(errno));
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

}  // namespace sg2::train
