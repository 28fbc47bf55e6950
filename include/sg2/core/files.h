#pragma once
// Whole-file reads, one definition for every module: snapshots and tensor files (char, as
// torch::pickle_load takes them) and encoded images (uint8_t); output directories.

#include <cstdint>
#include <string>
#include <utility>
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

// Refuses an output file `out` (the value of `option`, e.g. "--out") that is one of `inputs` (each
// with what it is: "the snapshot it exports") or that exists without `overwrite`; the errors say
// what to do instead.
void check_output_file(const std::string& option, const std::string& out, bool overwrite,
                       const std::vector<std::pair<std::string, std::string>>& inputs);

}  // namespace sg2
