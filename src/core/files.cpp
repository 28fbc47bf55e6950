#include "sg2/core/files.h"

#include "sg2/core/error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
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

}  // namespace sg2
