#include "sg2/core/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <fmt/format.h>

namespace sg2 {

namespace {
std::string pattern_for(int rank) {
  return rank == 0 ? std::string("%v") : fmt::format("[rank {}] %v", rank);
}
int g_rank = 0;
}  // namespace

void init_logging(int rank, bool verbose) {
  g_rank = rank;
  auto console = std::make_shared<spdlog::sinks::stdout_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("sg2", console);
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

}  // namespace sg2
