#include "sg2/core/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>

#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <mutex>

namespace sg2 {

namespace {
std::string pattern_for(int rank) {
  return rank == 0 ? std::string("%v") : fmt::format("[rank {}] %v", rank);
}
int g_rank = 0;
const char* const kLoggerName = "sg2";

// Errors to stderr, everything else to stdout, each line flushed.
class ConsoleSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t line;
    formatter_->format(message, line);
    std::FILE* stream = message.level >= spdlog::level::err ? stderr : stdout;
    std::fwrite(line.data(), 1, line.size(), stream);
    std::fflush(stream);
  }
  void flush_() override {
    std::fflush(stdout);
    std::fflush(stderr);
  }
};

}  // namespace

void init_logging(int rank, bool verbose) {
  g_rank = rank;
  auto console = std::make_shared<ConsoleSink>();
  auto logger = std::make_shared<spdlog::logger>(kLoggerName, console);
  logger->set_pattern(pattern_for(rank));
  spdlog::level::level_enum level = verbose ? spdlog::level::debug : spdlog::level::info;
  logger->set_level(rank == 0 ? level : spdlog::level::warn);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void add_log_file(const std::string& path) {
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
  file->set_pattern(pattern_for(g_rank));
  spdlog::default_logger()->sinks().push_back(file);
}

void log_fatal_error(const std::string& line) {
  if (spdlog::default_logger()->name() == kLoggerName) {
    spdlog::error(line);
    spdlog::default_logger()->flush();
  } else {
    std::cerr << line << std::endl;
  }
}

std::string what_of(const std::exception& error) { return error.what(); }

int run_reporting_errors(const char* program, const std::function<int()>& body, const ErrorMessage& message_of) {
  try {
    return body();
  } catch (const std::exception& e) {
    log_fatal_error(fmt::format("{}: error: {}", program, message_of(e)));
  }
  return 1;
}

}  // namespace sg2
