#pragma once
// Run directories: runs/NNNNN-<desc>/ with config.yaml, log.txt, stats.jsonl, reals.png,
// fakes*.png and network-snapshot-NNNNNN.pt; and resolving --resume PATH|latest to a snapshot.

#include <string>

namespace sg2::train {

// Creates <outdir>/<next id>-<desc> (ids are 5 digits, one more than the largest present).
std::string create_run_dir(const std::string& outdir, const std::string& desc);

// "network-snapshot-000123.pt" for 123,456 images.
std::string snapshot_name(int64_t cur_nimg);

// The snapshot with the most images in `run_dir`; empty if there is none.
std::string latest_snapshot_in(const std::string& run_dir);

// Drops the lines of a run's stats.jsonl past `cur_nimg` (written after the snapshot a resumed run
// continues from, before a crash) and a line a crash cut short; returns how many it dropped.
int trim_stats_after(const std::string& stats_path, int64_t cur_nimg);

// --resume argument -> snapshot file: a snapshot file, a run directory (its latest snapshot), or
// "latest" (the latest snapshot of the newest run directory under outdir that has one). A file's
// path comes back absolute: its directory is the run directory the training continues in.
std::string resolve_resume(const std::string& spec, const std::string& outdir);

}  // namespace sg2::train
