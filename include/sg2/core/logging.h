#pragma once
// Rank-aware logging on spdlog's default logger: rank 0 prints plain lines (info and up), other
// ranks print only warnings and errors, prefixed with their rank; errors go to stderr, the rest to
// stdout. A run directory adds log.txt (every rank's warnings and errors, rank 0's info lines).

#include <spdlog/spdlog.h>

#include <exception>
#include <functional>
#include <string>

namespace sg2 {

// Configures the default logger for this process. Safe to call again (e.g. once the rank is known).
void init_logging(int rank = 0, bool verbose = false);

// Also writes every line this process logs to `path` (appending, so a resumed run keeps its log).
void add_log_file(const std::string& path);

// The line that ends a program: on stderr and in every log file (before init_logging: stderr only).
void log_fatal_error(const std::string& line);

// Runs a program's `body`, turning an error into "<program>: error: <message>" (log_fatal_error) and
// exit code 1. `message_of` words the error: what() by default; programs on LibTorch pass
// train::message_of, which leaves out LibTorch's C++ backtrace.
using ErrorMessage = std::function<std::string(const std::exception&)>;
std::string what_of(const std::exception& error);
int run_reporting_errors(const char* program, const std::function<int()>& body,
                         const ErrorMessage& message_of = what_of);

}  // namespace sg2
