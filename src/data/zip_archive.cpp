#include "sg2/data/zip_archive.h"

#include "sg2/core/error.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace sg2::data {

namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint64_t kLocalHeaderBytes = 30, kCentralHeaderBytes = 46, kEndBytes = 22;
constexpr uint64_t kZip64EndBytes = 56, kZip64LocatorBytes = 20;
constexpr uint32_t kOverflow32 = 0xffffffffu;
constexpr uint16_t kOverflow16 = 0xffffu;

// Little-endian fields of a byte buffer, every access bounds-checked.
class FieldReader {
 public:
  FieldReader(const uint8_t* data, uint64_t size, const std::string& what) : data_(data), size_(size), what_(what) {}
  uint64_t get(uint64_t offset, int bytes) const {
    SG2_CHECK(offset + uint64_t(bytes) <= size_, "{}: truncated (field at byte {} beyond {} bytes)", what_, offset, size_);
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | data_[offset + uint64_t(i)];
    return value;
  }
  std::string text(uint64_t offset, uint64_t length) const {
    SG2_CHECK(offset + length <= size_, "{}: truncated name", what_);
    return std::string(reinterpret_cast<const char*>(data_ + offset), length);
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  std::string what_;
};

void put_le(std::vector<uint8_t>& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(value >> (8 * i)));
}

// The ZIP64 extra field's values replace the 32-bit fields that hold 0xffffffff, in this order.
void apply_zip64_extra(const FieldReader& fields, uint64_t start, uint64_t length, ZipEntry& entry, bool offset_overflows) {
  for (uint64_t at = start; at + 4 <= start + length;) {
    const uint64_t id = fields.get(at, 2), size = fields.get(at + 2, 2);
    if (id == 0x0001) {
      uint64_t value_at = at + 4;
      auto take = [&](uint64_t& field) {
        if (field == kOverflow32 && value_at + 8 <= at + 4 + size) {
          field = fields.get(value_at, 8);
          value_at += 8;
        }
      };
      take(entry.size);
      take(entry.compressed_size);
      if (offset_overflows) take(entry.header_offset);
    }
    at += 4 + size;
  }
}

// Where the central directory lies, from the end record, or from the ZIP64 end record where a ZIP64
// locator sits right before the end record. Without a locator a count of 0xffff is the true count
// (Python's zipfile writes 65535 entries so).
struct DirectoryLocation {
  uint64_t count = 0, size = 0, offset = 0;
};

DirectoryLocation locate_central_directory(const ReadOnlyFile& file) {
  // The end record sits in the last 22 + 65535 (comment) bytes.
  const uint64_t tail_size = std::min<uint64_t>(file.size(), kEndBytes + 0xffff);
  const std::vector<uint8_t> tail = file.read_bytes(tail_size, file.size() - tail_size, "the end of the archive");
  const std::string what = fmt::format("'{}'", file.path());
  const FieldReader tail_fields(tail.data(), tail_size, what);
  int64_t end_at = -1;
  for (int64_t at = int64_t(tail_size) - int64_t(kEndBytes); at >= 0 && end_at < 0; --at) {
    if (tail_fields.get(uint64_t(at), 4) == kEndSignature) end_at = at;
  }
  SG2_CHECK(end_at >= 0, "{} is not a ZIP archive (no end-of-central-directory record)", what);
  const DirectoryLocation plain{tail_fields.get(uint64_t(end_at) + 10, 2), tail_fields.get(uint64_t(end_at) + 12, 4),
                                tail_fields.get(uint64_t(end_at) + 16, 4)};
  const uint64_t end_offset = file.size() - tail_size + uint64_t(end_at);
  uint8_t locator[kZip64LocatorBytes] = {};
  if (end_offset >= kZip64LocatorBytes)
    file.read_at(locator, kZip64LocatorBytes, end_offset - kZip64LocatorBytes, "the ZIP64 locator");
  const FieldReader locator_fields(locator, kZip64LocatorBytes, what);
  if (locator_fields.get(0, 4) != kZip64LocatorSignature) {
    SG2_CHECK(plain.size != kOverflow32 && plain.offset != kOverflow32, "{}: ZIP64 locator missing", what);
    return plain;
  }
  uint8_t record[kZip64EndBytes];
  file.read_at(record, kZip64EndBytes, locator_fields.get(8, 8), "the ZIP64 end record");
  const FieldReader record_fields(record, kZip64EndBytes, what);
  SG2_CHECK(record_fields.get(0, 4) == kZip64EndSignature, "{}: bad ZIP64 end record", what);
  return {record_fields.get(32, 8), record_fields.get(40, 8), record_fields.get(48, 8)};
}

}  // namespace

ZipReader::ZipReader(const std::string& path) : file_(path, "ZIP archive") { read_central_directory(); }

bool ZipReader::looks_like(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  uint8_t signature[4] = {0, 0, 0, 0};
  const size_t got = std::fread(signature, 1, 4, f);
  std::fclose(f);
  return got == 4 && signature[0] == 'P' && signature[1] == 'K' && (signature[2] == 3 || signature[2] == 5);
}

void ZipReader::read_central_directory() {
  const auto [count, directory_size, directory_offset] = locate_central_directory(file_);
  SG2_CHECK(directory_offset <= file_.size() && directory_size <= file_.size() - directory_offset &&
                count <= directory_size / kCentralHeaderBytes,
            "'{}': the central directory ({} entries, {} bytes at {}) does not fit the file of {} bytes", path(), count,
            directory_size, directory_offset, file_.size());
  const std::vector<uint8_t> directory = file_.read_bytes(directory_size, directory_offset, "the central directory");
  const FieldReader fields(directory.data(), directory_size, fmt::format("'{}' central directory", path()));
  uint64_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    SG2_CHECK(fields.get(at, 4) == kCentralHeaderSignature, "'{}': central directory entry {} is corrupt", path(), i);
    ZipEntry entry;
    entry.method = uint16_t(fields.get(at + 10, 2));
    entry.crc32 = uint32_t(fields.get(at + 16, 4));
    entry.compressed_size = fields.get(at + 20, 4);
    entry.size = fields.get(at + 24, 4);
    const uint64_t name_length = fields.get(at + 28, 2), extra_length = fields.get(at + 30, 2);
    const uint64_t comment_length = fields.get(at + 32, 2);
    entry.header_offset = fields.get(at + 42, 4);
    entry.name = fields.text(at + kCentralHeaderBytes, name_length);
    apply_zip64_extra(fields, at + kCentralHeaderBytes + name_length, extra_length, entry,
                      entry.header_offset == kOverflow32);
    at += kCentralHeaderBytes + name_length + extra_length + comment_length;
    if (!entry.name.empty() && entry.name.back() != '/') entries_.push_back(std::move(entry));
  }
}

const ZipEntry* ZipReader::find(const std::string& name) const {
  for (const ZipEntry& entry : entries_) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::vector<uint8_t> ZipReader::read(const ZipEntry& entry) const {
  const std::string what = fmt::format("'{}' entry '{}'", path(), entry.name);
  uint8_t header[kLocalHeaderBytes];
  file_.read_at(header, kLocalHeaderBytes, entry.header_offset, ("the local header of " + entry.name).c_str());
  const FieldReader fields(header, kLocalHeaderBytes, what);
  SG2_CHECK(fields.get(0, 4) == kLocalHeaderSignature, "{}: bad local header", what);
  const uint64_t data_offset = entry.header_offset + kLocalHeaderBytes + fields.get(26, 2) + fields.get(28, 2);
  SG2_CHECK(entry.method == 0 || entry.method == 8, "{}: compression method {} is not supported (stored or deflate)",
            what, entry.method);
  SG2_CHECK(entry.size < kOverflow32 && entry.compressed_size < kOverflow32 &&  // zlib takes 32-bit lengths
                (entry.method == 8 || entry.compressed_size == entry.size),
            "{}: implausible sizes ({} compressed, {} uncompressed)", what, entry.compressed_size, entry.size);
  const std::string data_name = "the data of " + entry.name;
  std::vector<uint8_t> stored = file_.read_bytes(entry.compressed_size, data_offset, data_name.c_str());
  std::vector<uint8_t> data;
  if (entry.method == 0) {
    data = std::move(stored);
  } else {
    data.resize(entry.size);
    z_stream stream{};
    SG2_CHECK(inflateInit2(&stream, -MAX_WBITS) == Z_OK, "{}: zlib initialisation failed", what);
    stream.next_in = stored.data();
    stream.avail_in = static_cast<uInt>(stored.size());
    stream.next_out = data.data();
    stream.avail_out = static_cast<uInt>(data.size());
    const int status = inflate(&stream, Z_FINISH);
    const uint64_t produced = stream.total_out;
    inflateEnd(&stream);
    SG2_CHECK(status == Z_STREAM_END && produced == entry.size, "{}: corrupt deflate data", what);
  }
  const auto crc = uint32_t(crc32_z(0L, data.data(), data.size()));
  SG2_CHECK(crc == entry.crc32, "{}: CRC-32 mismatch (stored {:#010x}, computed {:#010x})", what, entry.crc32, crc);
  return data;
}

// ---- writing ------------------------------------------------------------------------------------

ZipWriter::ZipWriter(const std::string& path) : out_(path) {}

void ZipWriter::put(const void* data, uint64_t size) {
  out_.write(data, size);
  offset_ += size;
}

void ZipWriter::add(const std::string& name, const void* data, uint64_t size) {
  SG2_CHECK(out_.is_open(), "'{}' is already closed", out_.path());
  SG2_CHECK(name.size() < 0xffff, "ZIP entry name too long: {}", name);
  ZipEntry entry{name, offset_, size, size, uint32_t(crc32_z(0L, static_cast<const Bytef*>(data), size)), 0};
  const bool large = size >= kOverflow32;
  std::vector<uint8_t> header;
  put_le(header, kLocalHeaderSignature, 4);
  put_le(header, large ? 45 : 20, 2);    // version needed
  put_le(header, 0x0800, 2);             // flags: UTF-8 names
  put_le(header, 0, 2);                  // stored
  put_le(header, 0, 2);                  // time 00:00
  put_le(header, 0x21, 2);               // date 1980-01-01
  put_le(header, entry.crc32, 4);
  put_le(header, large ? kOverflow32 : size, 4);
  put_le(header, large ? kOverflow32 : size, 4);
  put_le(header, name.size(), 2);
  put_le(header, large ? 20 : 0, 2);
  header.insert(header.end(), name.begin(), name.end());
  if (large) {
    put_le(header, 0x0001, 2);
    put_le(header, 16, 2);
    put_le(header, size, 8);
    put_le(header, size, 8);
  }
  put(header.data(), header.size());
  put(data, size);
  entries_.push_back(std::move(entry));
}

void ZipWriter::close() {
  if (!out_.is_open()) return;
  const uint64_t directory_offset = offset_;
  for (const ZipEntry& entry : entries_) {
    std::vector<uint8_t> extra;
    if (entry.size >= kOverflow32) {
      put_le(extra, entry.size, 8);
      put_le(extra, entry.compressed_size, 8);
    }
    if (entry.header_offset >= kOverflow32) put_le(extra, entry.header_offset, 8);
    std::vector<uint8_t> header;
    put_le(header, kCentralHeaderSignature, 4);
    put_le(header, 45, 2);  // made by
    put_le(header, extra.empty() ? 20 : 45, 2);
    put_le(header, 0x0800, 2);
    put_le(header, 0, 2);
    put_le(header, 0, 2);
    put_le(header, 0x21, 2);
    put_le(header, entry.crc32, 4);
    put_le(header, std::min<uint64_t>(entry.compressed_size, kOverflow32), 4);
    put_le(header, std::min<uint64_t>(entry.size, kOverflow32), 4);
    put_le(header, entry.name.size(), 2);
    put_le(header, extra.empty() ? 0 : extra.size() + 4, 2);
    put_le(header, 0, 2);  // comment
    put_le(header, 0, 2);  // disk
    put_le(header, 0, 2);  // internal attributes
    put_le(header, 0, 4);  // external attributes
    put_le(header, std::min<uint64_t>(entry.header_offset, kOverflow32), 4);
    header.insert(header.end(), entry.name.begin(), entry.name.end());
    if (!extra.empty()) {
      put_le(header, 0x0001, 2);
      put_le(header, extra.size(), 2);
      header.insert(header.end(), extra.begin(), extra.end());
    }
    put(header.data(), header.size());
  }
  const uint64_t directory_size = offset_ - directory_offset, count = entries_.size();
  const bool zip64 = count >= kOverflow16 || directory_offset >= kOverflow32 || directory_size >= kOverflow32;
  std::vector<uint8_t> end;
  if (zip64) {
    const uint64_t record_offset = offset_;
    put_le(end, kZip64EndSignature, 4);
    put_le(end, kZip64EndBytes - 12, 8);
    put_le(end, 45, 2);
    put_le(end, 45, 2);
    put_le(end, 0, 4);
    put_le(end, 0, 4);
    put_le(end, count, 8);
    put_le(end, count, 8);
    put_le(end, directory_size, 8);
    put_le(end, directory_offset, 8);
    put_le(end, kZip64LocatorSignature, 4);
    put_le(end, 0, 4);
    put_le(end, record_offset, 8);
    put_le(end, 1, 4);
  }
  put_le(end, kEndSignature, 4);
  put_le(end, 0, 4);  // disk numbers
  put_le(end, std::min<uint64_t>(count, kOverflow16), 2);
  put_le(end, std::min<uint64_t>(count, kOverflow16), 2);
  put_le(end, std::min<uint64_t>(directory_size, kOverflow32), 4);
  put_le(end, std::min<uint64_t>(directory_offset, kOverflow32), 4);
  put_le(end, 0, 2);  // comment
  put(end.data(), end.size());
  out_.commit();
}

}  // namespace sg2::data
