#pragma once
// Helpers shared by the unit tests: temporary directories, paths to shared/ and the source tree.

#include <gtest/gtest.h>

#include "sg2/core/error.h"

#include <filesystem>
#include <functional>
#include <random>
#include <string>

namespace sg2::test {

inline std::string source_dir() { return SG2_SOURCE_DIR; }
inline std::string shared_dir() { return SG2_SHARED_DIR; }

// The message of the sg2::Error that `body` throws, or "" if it throws none.
inline std::string error_message(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
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
