#include "sg2/data/atomic_file.h"

#include "sg2/core/error.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>

namespace sg2::data {

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), temp_path_(path + ".tmp" + std::to_string(::getpid())) {
  file_ = std::fopen(temp_path_.c_str(), "wb");
  SG2_CHECK(file_ != nullptr, "cannot create '{}': {}", temp_path_, std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  std::remove(temp_path_.c_str());
}

void AtomicFileWriter::write(const void* data, uint64_t size) {
  SG2_CHECK(file_ != nullptr, "'{}' is already closed", path_);
  SG2_CHECK(std::fwrite(data, 1, size, file_) == size, "writing '{}' failed: {}", temp_path_, std::strerror(errno));
}

void AtomicFileWriter::commit() {
  SG2_CHECK(file_ != nullptr, "'{}' is already closed", path_);
  const bool synced = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  const int sync_error = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!synced || !closed) std::remove(temp_path_.c_str());
  SG2_CHECK(synced && closed, "writing '{}' failed: {}", temp_path_, std::strerror(synced ? errno : sync_error));
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    std::remove(temp_path_.c_str());
    SG2_FAIL("renaming '{}' to '{}' failed: {}", temp_path_, path_, std::strerror(error));
  }
}

void write_file_atomically(const std::string& path, const void* data, uint64_t size) {
  AtomicFileWriter file(path);
  file.write(data, size);
  file.commit();
}

std::vector<std::string> remove_interrupted_writes(const std::string& directory) {
  namespace fs = std::filesystem;
  const std::regex temporary_name(R"(.+\.tmp(\d+))");
  const std::string own_pid = std::to_string(::getpid());
  std::vector<std::string> removed;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (!entry.is_regular_file() || !std::regex_match(name, match, temporary_name) || match[1].str() == own_pid) continue;
    if (fs::remove(entry.path(), error)) removed.push_back(entry.path().string());
  }
  return removed;
}

}  // namespace sg2::data
