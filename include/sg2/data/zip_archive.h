#pragma once
// ZIP archives as stylegan2-ada-pytorch stores datasets (docs/architecture.md, "File formats"): read with stored or
// deflated entries and ZIP64 (FFHQ-sized archives), written uncompressed (as its dataset_tool does)
// with ZIP64 records where sizes or counts need them. Reads are thread-safe (pread); every entry's
// CRC-32 is checked. Sizes in the central directory are checked against the file before anything is
// allocated.

#include "sg2/data/atomic_file.h"
#include "sg2/data/read_only_file.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sg2::data {

struct ZipEntry {
  std::string name;
  uint64_t header_offset = 0;  // of the local file header
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint32_t crc32 = 0;
  uint16_t method = 0;  // 0 stored, 8 deflated
};

class ZipReader {
 public:
  explicit ZipReader(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;  // nullptr when absent
  std::vector<uint8_t> read(const ZipEntry& entry) const;

  static bool looks_like(const std::string& path);  // a regular file starting with a ZIP signature

 private:
  void read_central_directory();

  ReadOnlyFile file_;
  std::vector<ZipEntry> entries_;
};

// Writes an uncompressed archive to a temporary name, renamed by close().
class ZipWriter {
 public:
  explicit ZipWriter(const std::string& path);
  void add(const std::string& name, const void* data, uint64_t size);
  void close();

 private:
  void put(const void* data, uint64_t size);

  AtomicFileWriter out_;
  uint64_t offset_ = 0;
  std::vector<ZipEntry> entries_;
};

}  // namespace sg2::data
