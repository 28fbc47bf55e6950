#include "sg2/data/npy.h"

#include "sg2/core/error.h"

#include <filesystem>
#include <fstream>
#include <regex>

namespace sg2::data {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr uint64_t kMaxHeaderBytes = 1 << 16;

std::string read_header(std::ifstream& in, const std::string& path) {
  char magic[6];
  uint8_t version[2];
  SG2_CHECK(in.read(magic, 6) && std::string(magic, 6) == std::string(kMagic, 6),
            "'{}' is not a NumPy .npy file (bad magic)", path);
  SG2_CHECK(in.read(reinterpret_cast<char*>(version), 2) && version[0] >= 1 && version[0] <= 3,
            "'{}': unsupported .npy version {}", path, int(version[0]));
  uint8_t length_bytes[4] = {0, 0, 0, 0};
  const int length_size = version[0] == 1 ? 2 : 4;
  SG2_CHECK(in.read(reinterpret_cast<char*>(length_bytes), length_size), "'{}': truncated .npy header", path);
  uint64_t length = 0;
  for (int i = length_size - 1; i >= 0; --i) length = (length << 8) | length_bytes[i];
  SG2_CHECK(length <= kMaxHeaderBytes, "'{}': .npy header of {} bytes is implausible", path, length);
  std::string header(length, '\0');
  SG2_CHECK(in.read(header.data(), static_cast<std::streamsize>(length)), "'{}': truncated .npy header", path);
  return header;
}

std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  const std::regex pattern("'" + key + "'\\s*:\\s*('[^']*'|True|False|\\([^)]*\\))");
  std::smatch match;
  SG2_CHECK(std::regex_search(header, match, pattern), "'{}': .npy header has no '{}': {}", path, key, header);
  return match[1];
}

}  // namespace

FloatMatrix read_npy_float32(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  SG2_CHECK(in.good(), "cannot open '{}'", path);
  const std::string header = read_header(in, path);
  const std::string descr = header_field(header, "descr", path);
  SG2_CHECK(descr == "'<f4'", "'{}': {} must be float32 ('<f4'), the file has {}", path, what, descr);
  SG2_CHECK(header_field(header, "fortran_order", path) == "False", "'{}': Fortran-ordered arrays are not supported",
            path);
  const std::string shape = header_field(header, "shape", path);
  std::smatch dims;
  const std::regex two_dims("\\(\\s*(\\d{1,18})\\s*,\\s*(\\d{1,18})\\s*\\)");  // 18 digits: no overflow
  SG2_CHECK(std::regex_match(shape, dims, two_dims), "'{}': expected a 2-D array of {} with counts of 0 to 10^18, the "
            "shape is {}", path, what, shape);
  FloatMatrix matrix;
  matrix.rows = std::stoll(dims[1]);
  matrix.cols = std::stoll(dims[2]);
  const auto data_start = static_cast<uint64_t>(in.tellg());
  const uint64_t file_size = std::filesystem::file_size(path);
  const uint64_t data_size = file_size - data_start, row_size = uint64_t(matrix.cols) * 4;
  // Divided first, so that no product of the header's numbers overflows.
  const bool countable = row_size == 0 || uint64_t(matrix.rows) <= UINT64_MAX / row_size;
  SG2_CHECK(matrix.cols <= (1 << 20) && countable && uint64_t(matrix.rows) * row_size == data_size,
            "'{}': shape ({}, {}) needs {} bytes of data but the file has {}", path, matrix.rows, matrix.cols,
            countable ? std::to_string(uint64_t(matrix.rows) * row_size) : "over 2^64", data_size);
  matrix.values.resize(static_cast<size_t>(matrix.rows * matrix.cols));
  in.read(reinterpret_cast<char*>(matrix.values.data()), static_cast<std::streamsize>(data_size));
  SG2_CHECK(in.good(), "'{}': read failed", path);
  return matrix;
}

void write_npy_float32(const std::string& path, const FloatMatrix& matrix) {
  SG2_CHECK(static_cast<int64_t>(matrix.values.size()) == matrix.rows * matrix.cols, "matrix [{}, {}] has {} values",
            matrix.rows, matrix.cols, matrix.values.size());
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", matrix.rows,
                                   matrix.cols);
  // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64 bytes.
  const size_t unpadded = 6 + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary);
    SG2_CHECK(out.good(), "cannot create '{}'", temp);
    out.write(kMagic, 6);
    const char version[2] = {1, 0};
    out.write(version, 2);
    const uint16_t length = static_cast<uint16_t>(header.size());
    const char length_bytes[2] = {char(length & 0xff), char(length >> 8)};
    out.write(length_bytes, 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(matrix.values.data()),
              static_cast<std::streamsize>(matrix.values.size() * sizeof(float)));
    SG2_CHECK(out.good(), "writing '{}' failed", temp);
  }
  std::filesystem::rename(temp, path);
}

}  // namespace sg2::data
