#pragma once
// Helpers shared by the unit tests: temporary directories, paths to shared/ and the source tree.

#include <gtest/gtest.h>

#include "sg2/core/error.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace sg2::test {

// The source tree and shared/ as configured, unless SG2_TEST_SOURCE_DIR / SG2_TEST_SHARED_DIR name
// others: binaries built on one machine and run on another (the GPU kit's prebuilt binaries).
inline std::string directory_from_env(const char* variable, const char* configured) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? value : configured;
}
inline std::string source_dir() { return directory_from_env("SG2_TEST_SOURCE_DIR", SG2_SOURCE_DIR); }
inline std::string shared_dir() { return directory_from_env("SG2_TEST_SHARED_DIR", SG2_SHARED_DIR); }

// The message of the sg2::Error that `body` throws, or "" if it throws none.
inline std::string error_message(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Writes `bytes` as the whole file at `path` (damaged or hand-made inputs).
inline void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory under the system temp dir, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() / ("sg2-test-" + std::to_string(random()) + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace sg2::test
