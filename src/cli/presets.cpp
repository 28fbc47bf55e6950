#include "sg2/cli/presets.h"

#include "sg2/core/error.h"
#include "sg2/core/system.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

namespace sg2::cli {

namespace fs = std::filesystem;

std::vector<std::string> preset_directories() {
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("SG2_PRESET_DIR"); dir != nullptr && *dir != 0) candidates.emplace_back(dir);
  if (const std::string program = own_executable(); !program.empty()) {
    candidates.push_back(fs::path(program).parent_path() / ".." / "share" / "stylegan2-cpp" / "configs");
  }
  candidates.emplace_back(SG2_SOURCE_PRESET_DIR);
  std::vector<std::string> found;
  for (const fs::path& dir : candidates) {
    std::error_code error;
    if (fs::is_directory(dir, error)) found.push_back(dir.lexically_normal().string());
  }
  return found;
}

std::vector<std::string> preset_names() {
  std::set<std::string> names;
  for (const std::string& dir : preset_directories()) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

std::string preset_or_file(const std::string& spec) {
  std::error_code error;
  if (fs::is_regular_file(spec, error)) return spec;
  const bool a_name = !spec.empty() && spec.find('/') == std::string::npos;
  if (a_name) {
    const std::string stem = fs::path(spec).extension() == ".yaml" ? fs::path(spec).stem().string() : spec;
    for (const std::string& dir : preset_directories()) {
      const fs::path file = fs::path(dir) / (stem + ".yaml");
      if (fs::is_regular_file(file, error)) return file.string();
    }
  }
  const std::vector<std::string> dirs = preset_directories();
  const std::string where = dirs.empty() ? std::string("no preset directory") : fmt::format("{}", fmt::join(dirs, ", "));
  SG2_FAIL("--config '{}': no such file{}; the presets are {} (in {})", spec,
           a_name ? ", and no preset of that name" : "", fmt::join(preset_names(), ", "), where);
}

}  // namespace sg2::cli
