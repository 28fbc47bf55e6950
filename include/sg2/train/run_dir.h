#pragma once
// Run directories: runs/NNNNN-<desc>/ with config.yaml, log.txt, stats.jsonl, reals.png,
// fakes*.png and network-snapshot-NNNNNN.pt; and resolving --resume PATH|latest to a snapshot.

#include <string>

namespace sg2::train {

// Creates <outdir>/<next id>-<desc> (ids are 5 digits, one more than the largest present).
std::string create_run_dir(const std::string& outdir, const std::string& desc);

// The images shown, in the names of a tick's files: whole kimg ("000123", the reference's names) for
// the first tick to end in its kimg (previous_tick_nimg: where the tick before it ended, -1 for a
// run's first tick), kimg and images ("000123.456") for later ones, so that ticks shorter than a kimg
// never write over an earlier tick's files, nor a resumed run over the snapshot it resumed from.
std::string kimg_label(int64_t cur_nimg, int64_t previous_tick_nimg = -1);

// "network-snapshot-" + kimg_label + ".pt".
std::string snapshot_name(int64_t cur_nimg, int64_t previous_tick_nimg = -1);

// The snapshot with the most images in `run_dir`; empty if there is none.
std::string latest_snapshot_in(const std::string& run_dir);

// Drops the lines of a run's stats.jsonl past `cur_nimg` (written after the snapshot a resumed run
// continues from, before a crash) and a line a crash cut short; returns how many it dropped.
int trim_stats_after(const std::string& stats_path, int64_t cur_nimg);

// --resume argument -> snapshot file: a snapshot file, a run directory (its latest snapshot), or
// "latest" (the latest snapshot of the newest run directory under outdir that has one). A file's
// path comes back absolute: its directory is the run directory the training continues in.
std::string resolve_resume(const std::string& spec, const std::string& outdir);

// Held by rank 0 while a run writes its directory (an flock on <run_dir>/.lock, which the kernel
// releases however the process ends): a second run that would write there, a resume of a run still
// training, is refused, naming the holder's pid and host, before it writes anything.
class RunDirLock {
 public:
  explicit RunDirLock(const std::string& run_dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace sg2::train
