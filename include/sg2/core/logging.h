#pragma once
// Rank-aware logging on spdlog's default logger: rank 0 prints plain lines (info and up), other
// ranks print only warnings and errors, prefixed with their rank. A run directory adds log.txt.

#include <spdlog/spdlog.h>

#include <string>

namespace sg2 {

// Configures the default logger for this process. Safe to call again (e.g. once the rank is known).
void init_logging(int rank = 0, bool verbose = false);

// Also writes every line this process logs to `path` (appending, so a resumed run keeps its log).
void add_log_file(const std::string& path);

}  // namespace sg2
