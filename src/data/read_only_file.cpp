#include "sg2/data/read_only_file.h"

#include "sg2/core/error.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sg2::data {

ReadOnlyFile::ReadOnlyFile(const std::string& path, const char* kind) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SG2_CHECK(fd_ >= 0, "cannot open {} '{}': {}", kind, path, std::strerror(errno));
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end < 0) ::close(fd_);
  SG2_CHECK(end >= 0, "cannot determine the size of '{}': {}", path, std::strerror(errno));
  size_ = static_cast<uint64_t>(end);
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
std::string name_of(const char* what, int64_t index) {
  return index >= 0 ? fmt::format("{} {}", what, index) : std::string(what);
}
}  // namespace

void ReadOnlyFile::check_range(uint64_t count, uint64_t offset, const char* what, int64_t index) const {
  SG2_CHECK(offset <= size_ && count <= size_ - offset,
            "'{}': {} at byte offset {} ({} bytes) lies beyond the end of the file ({} bytes)", path_,
            name_of(what, index), offset, count, size_);
}

std::vector<uint8_t> ReadOnlyFile::read_bytes(uint64_t count, uint64_t offset, const char* what) const {
  check_range(count, offset, what, -1);
  std::vector<uint8_t> bytes(count);
  read_within(bytes.data(), count, offset, what, -1);
  return bytes;
}

void ReadOnlyFile::read_at(void* out, uint64_t count, uint64_t offset, const char* what, int64_t index) const {
  check_range(count, offset, what, index);
  read_within(out, count, offset, what, index);
}

void ReadOnlyFile::read_within(void* out, uint64_t count, uint64_t offset, const char* what, int64_t index) const {
  auto* p = static_cast<uint8_t*>(out);
  while (count > 0) {
    const ssize_t got = ::pread(fd_, p, count, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    SG2_CHECK(got > 0, "'{}': reading {} at byte offset {} failed: {}", path_, name_of(what, index), offset,
              got < 0 ? std::strerror(errno) : "end of file");
    p += got;
    offset += static_cast<uint64_t>(got);
    count -= static_cast<uint64_t>(got);
  }
}

}  // namespace sg2::data
