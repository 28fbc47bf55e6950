#include "sg2/core/cpu_level.h"

#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"

#include <atomic>
#include <cstdlib>

namespace sg2::cpu {

namespace {

constexpr EnumNames<Level, 3> kLevels{{{Level::Baseline, "baseline"}, {Level::Avx2, "avx2"}, {Level::Avx512, "avx512"}}};
constexpr int kUnset = -1;
std::atomic<int> g_level{kUnset};

Level initial_level() {
  const char* forced = std::getenv("SG2_CPU_LEVEL");
  if (forced == nullptr || *forced == 0) return best_supported_level();
  const Level level = parse_level(forced);
  SG2_CHECK(level <= best_supported_level(), "SG2_CPU_LEVEL={}: this CPU supports at most {}", forced,
            to_string(best_supported_level()));
  return level;
}

}  // namespace

std::string to_string(Level level) { return enum_name(kLevels, level); }
Level parse_level(const std::string& name) { return parse_enum(kLevels, name, "CPU level"); }

Level best_supported_level() {
#if SG2_CPU_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return Level::Avx512;
  if (__builtin_cpu_supports("x86-64-v3")) return Level::Avx2;
#endif
  return Level::Baseline;
}

std::vector<Level> supported_levels() {
  std::vector<Level> levels;
  for (int l = 0; l <= static_cast<int>(best_supported_level()); ++l) levels.push_back(static_cast<Level>(l));
  return levels;
}

Level cpu_level() {
  int level = g_level.load(std::memory_order_relaxed);
  if (level == kUnset) {
    level = static_cast<int>(initial_level());
    g_level.store(level, std::memory_order_relaxed);
  }
  return static_cast<Level>(level);
}

void force_cpu_level(Level level) {
  SG2_CHECK(level <= best_supported_level(), "CPU level {} forced, but this CPU supports at most {}", to_string(level),
            to_string(best_supported_level()));
  g_level = static_cast<int>(level);
}

}  // namespace sg2::cpu
