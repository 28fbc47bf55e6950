#include "sg2/core/files.h"

#include "sg2/core/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace sg2 {

namespace {

template <class Byte>
void read_whole_file(const std::string& path, std::vector<Byte>& out) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  SG2_CHECK(file != nullptr, "cannot open '{}': {}", path, std::strerror(errno));
  out.clear();
  Byte chunk[1 << 16];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) out.insert(out.end(), chunk, chunk + got);
  SG2_CHECK(!std::ferror(file.get()), "reading '{}' failed", path);
}

}  // namespace

void read_file_into(const std::string& path, std::vector<char>& out) { read_whole_file(path, out); }

void read_file_into(const std::string& path, std::vector<uint8_t>& out) { read_whole_file(path, out); }

void create_output_directory(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(path, error);
  if (!error && fs::is_directory(path)) return;
  // The first part of the path that exists and is not a directory blocks it.
  for (fs::path part = fs::path(path); !part.empty() && part != part.root_path(); part = part.parent_path()) {
    if (fs::exists(part) && !fs::is_directory(part)) {
      SG2_FAIL("cannot create {} '{}': a file '{}' is in the way", what, path, part.string());
    }
  }
  SG2_FAIL("cannot create {} '{}': {}", what, path, error ? error.message() : "it is not a directory");
}

void check_output_file(const std::string& option, const std::string& out, bool overwrite,
                       const std::vector<std::pair<std::string, std::string>>& inputs) {
  for (const auto& [input, role] : inputs) {
    std::error_code error;
    SG2_CHECK(!std::filesystem::equivalent(input, out, error), "{} '{}' is {}; write to a new path", option, out, role);
  }
  SG2_CHECK(overwrite || !std::filesystem::exists(out),
            "{} '{}' exists; pass --overwrite to replace it, or choose a new path", option, out);
}

}  // namespace sg2
