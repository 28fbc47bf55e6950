#pragma once
// Whole-file reads, one definition for every module: snapshots and tensor files (char, as
// torch::pickle_load takes them) and encoded images (uint8_t); output directories.

#include <cstdint>
#include <string>
#include <vector>

namespace sg2 {

// Reads the whole file at `path` into `out`; errors name the path.
void read_file_into(const std::string& path, std::vector<char>& out);
void read_file_into(const std::string& path, std::vector<uint8_t>& out);

template <class Byte = uint8_t>
std::vector<Byte> read_file_bytes(const std::string& path) {
  std::vector<Byte> bytes;
  read_file_into(path, bytes);
  return bytes;
}

// Creates `path` and its parents (existing ones are fine); the error says which option or file it is
// for (`what`, e.g. "--outdir") and why, e.g. "a file 'runs' is in the way" or "Permission denied".
void create_output_directory(const std::string& path, const std::string& what);

}  // namespace sg2
