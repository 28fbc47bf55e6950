#pragma once
// A file written under a temporary name (<path>.tmp<pid>) and renamed over `path` by commit(), so a
// reader sees the old file or the whole new one and a crash never leaves a partial file under the
// final name. Shared by the TFRecord and ZIP writers and the snapshots.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sg2::data {

class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();  // not committed: the temporary file is removed
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, uint64_t size);
  // Flushes, fsyncs, closes and renames; errors name the file. Later writes are errors.
  void commit();
  bool is_open() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, temp_path_;
  std::FILE* file_ = nullptr;
};

// The whole file at once.
void write_file_atomically(const std::string& path, const void* data, uint64_t size);

// Removes the temporary files (<name>.tmp<pid>) a killed writer left in `directory`, other than this
// process's own; returns their paths. Call it before this process writes there.
std::vector<std::string> remove_interrupted_writes(const std::string& directory);

}  // namespace sg2::data
