#pragma once
// A file opened for thread-safe random reads (pread), shared by the TFRecord and ZIP readers. Every
// read is bounds-checked against the file size first; errors name the file, what was being read
// and the byte offset.

#include <cstdint>
#include <string>
#include <vector>

namespace sg2::data {

class ReadOnlyFile {
 public:
  ReadOnlyFile(const std::string& path, const char* kind);  // kind: "TFRecord file", "ZIP archive"
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  // Reads exactly `count` bytes at `offset`; `what` (with `index` when >= 0) names them in errors.
  void read_at(void* out, uint64_t count, uint64_t offset, const char* what, int64_t index = -1) const;
  // The same into a new buffer, allocated only once the bytes are known to lie within the file (a
  // size read from a damaged file cannot make it allocate more than the file holds).
  std::vector<uint8_t> read_bytes(uint64_t count, uint64_t offset, const char* what) const;

 private:
  void check_range(uint64_t count, uint64_t offset, const char* what, int64_t index) const;
  // read_at once the range is checked
  void read_within(void* out, uint64_t count, uint64_t offset, const char* what, int64_t index) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace sg2::data
