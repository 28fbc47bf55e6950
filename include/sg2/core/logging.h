#pragma once
// Rank-aware logging on spdlog's default logger: rank 0 prints plain lines (info and up), other
// ranks print only warnings and errors, prefixed with their rank; errors go to stderr, the rest to
// stdout. A run directory adds log.txt (every rank's warnings and errors, rank 0's info lines).

#include <spdlog/spdlog.h>

#include <string>

namespace sg2 {

// Configures the default logger for this process. Safe to call again (e.g. once the rank is known).
void init_logging(int rank = 0, bool verbose = false);

// Also writes every line this process logs to `path` (appending, so a resumed run keeps its log).
void add_log_file(const std::string& path);

// The line that ends a program: on stderr and in every log file (before init_logging: stderr only).
void log_fatal_error(const std::string& line);

}  // namespace sg2
