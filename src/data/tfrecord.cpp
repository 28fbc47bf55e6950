#include "sg2/data/tfrecord.h"

#include "sg2/core/error.h"
#include "sg2/core/progress.h"
#include "sg2/data/crc32c.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace sg2::data {

namespace {

uint64_t load_le64(const uint8_t* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

uint32_t load_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

void store_le(uint8_t* p, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(value >> (8 * i));
}

std::string where(const std::string& name, int64_t record, uint64_t offset) {
  return fmt::format("'{}': record {} at byte offset {}", name, record, offset);
}

// Decodes and checks a record header; bytes_left counts from the header to the end of the data.
uint64_t decode_header(const uint8_t* header, uint64_t bytes_left, const std::string& name, int64_t record,
                       uint64_t offset) {
  SG2_CHECK(bytes_left >= kRecordHeaderBytes, "{}: truncated header ({} of {} bytes); the file is cut short",
            where(name, record, offset), bytes_left, kRecordHeaderBytes);
  const uint64_t length = load_le64(header);
  const uint32_t stored = load_le32(header + 8);
  const uint32_t computed = masked_crc32c(header, 8);
  SG2_CHECK(stored == computed, "{}: length CRC mismatch (stored {:#010x}, computed {:#010x}); the file is corrupt",
            where(name, record, offset), stored, computed);
  SG2_CHECK(length <= kMaxRecordBytes, "{}: record length {} exceeds the limit of {} bytes",
            where(name, record, offset), length, kMaxRecordBytes);
  const uint64_t needed = kRecordHeaderBytes + length + kRecordFooterBytes;
  SG2_CHECK(needed <= bytes_left, "{}: truncated record: it needs {} bytes but only {} remain",
            where(name, record, offset), needed, bytes_left);
  return length;
}

void check_payload(const uint8_t* payload, uint64_t length, const uint8_t* footer, const std::string& name,
                   int64_t record, uint64_t offset) {
  const uint32_t stored = load_le32(footer);
  const uint32_t computed = masked_crc32c(payload, length);
  SG2_CHECK(stored == computed, "{}: payload CRC mismatch (stored {:#010x}, computed {:#010x}); the file is corrupt",
            where(name, record, offset), stored, computed);
}

}  // namespace

void parse_records(const uint8_t* data, uint64_t size, const std::string& name, const RecordVisitor& visit) {
  uint64_t offset = 0;
  for (int64_t record = 0; offset < size; ++record) {
    const uint64_t length = decode_header(data + offset, size - offset, name, record, offset);
    const uint8_t* payload = data + offset + kRecordHeaderBytes;
    check_payload(payload, length, payload + length, name, record, offset);
    visit(record, payload, length);
    offset += kRecordHeaderBytes + length + kRecordFooterBytes;
  }
}

void append_record(std::vector<uint8_t>& out, const void* payload, uint64_t size) {
  uint8_t header[kRecordHeaderBytes];
  store_le(header, size, 8);
  store_le(header + 8, masked_crc32c(header, 8), 4);
  uint8_t footer[kRecordFooterBytes];
  store_le(footer, masked_crc32c(payload, size), 4);
  const auto* bytes = static_cast<const uint8_t*>(payload);
  out.insert(out.end(), header, header + kRecordHeaderBytes);
  out.insert(out.end(), bytes, bytes + size);
  out.insert(out.end(), footer, footer + kRecordFooterBytes);
}

// ---- reading files ------------------------------------------------------------------------------

std::vector<RecordSpan> TFRecordFile::scan(const std::function<void(uint64_t offset)>& progress) const {
  std::vector<RecordSpan> spans;
  uint8_t header[kRecordHeaderBytes];
  uint64_t offset = 0;
  for (int64_t record = 0; offset < file_size(); ++record) {
    const uint64_t left = file_size() - offset;
    if (left >= kRecordHeaderBytes) file_.read_at(header, kRecordHeaderBytes, offset, "record", record);
    const uint64_t length = decode_header(header, left, path(), record, offset);
    spans.push_back({offset, length});
    offset = spans.back().end();
    if (progress) progress(offset);
  }
  return spans;
}

void TFRecordFile::read(int64_t record, const RecordSpan& span, std::vector<uint8_t>& payload) const {
  SG2_CHECK(span.end() <= file_size() && span.length <= kMaxRecordBytes,
            "{}: the record index does not fit the file ({} bytes); delete '{}.sg2index'",
            where(path(), record, span.offset), file_size(), path());
  payload.resize(span.length + kRecordHeaderBytes + kRecordFooterBytes);
  file_.read_at(payload.data(), payload.size(), span.offset, "record", record);
  const uint64_t length = decode_header(payload.data(), payload.size(), path(), record, span.offset);
  SG2_CHECK(length == span.length, "{}: length {} differs from the index's {}; delete '{}.sg2index'",
            where(path(), record, span.offset), length, span.length, path());
  check_payload(payload.data() + kRecordHeaderBytes, length, payload.data() + kRecordHeaderBytes + length, path(),
                record, span.offset);
  payload.erase(payload.begin(), payload.begin() + kRecordHeaderBytes);
  payload.resize(length);
}

// ---- the index cache ----------------------------------------------------------------------------

namespace {

constexpr char kIndexMagic[8] = {'S', 'G', '2', 'I', 'D', 'X', '1', '\0'};
constexpr size_t kIndexWorthCaching = 1000;

struct IndexKey {
  uint64_t file_size;
  int64_t modified;  // file clock ticks
};

IndexKey index_key(const TFRecordFile& file) {
  const auto modified = std::filesystem::last_write_time(file.path()).time_since_epoch().count();
  return {file.file_size(), static_cast<int64_t>(modified)};
}

bool read_cached_index(const std::string& cache, const IndexKey& key, std::vector<RecordSpan>& spans) {
  std::ifstream in(cache, std::ios::binary);
  char magic[8];
  IndexKey stored{};
  uint64_t count = 0;
  if (!in.read(magic, 8) || std::memcmp(magic, kIndexMagic, 8) != 0) return false;
  if (!in.read(reinterpret_cast<char*>(&stored), sizeof stored) || !in.read(reinterpret_cast<char*>(&count), 8)) return false;
  if (stored.file_size != key.file_size || stored.modified != key.modified) return false;
  if (count > key.file_size / (kRecordHeaderBytes + kRecordFooterBytes)) return false;
  spans.resize(count);
  if (!in.read(reinterpret_cast<char*>(spans.data()), static_cast<std::streamsize>(count * sizeof(RecordSpan)))) return false;
  // The spans must tile the file exactly, as a scan would have found them.
  uint64_t offset = 0;
  for (const RecordSpan& span : spans) {
    if (span.offset != offset || span.length > kMaxRecordBytes) return false;
    offset = span.end();
  }
  return offset == key.file_size;
}

void write_cached_index(const std::string& cache, const IndexKey& key, const std::vector<RecordSpan>& spans) {
  const uint64_t count = spans.size();
  try {
    AtomicFileWriter out(cache);
    out.write(kIndexMagic, 8);
    out.write(&key, sizeof key);
    out.write(&count, 8);
    out.write(spans.data(), count * sizeof(RecordSpan));
    out.commit();
  } catch (const Error&) {
    // read-only dataset directory: the scan is simply repeated next time
  }
}

}  // namespace

std::vector<RecordSpan> load_record_index(const TFRecordFile& file) {
  const std::string cache = file.path() + ".sg2index";
  const IndexKey key = index_key(file);
  std::vector<RecordSpan> spans;
  if (read_cached_index(cache, key, spans)) return spans;
  ProgressMeter meter("indexing " + file.path(), static_cast<int64_t>(file.file_size() >> 20), "MiB");
  spans = file.scan([&meter](uint64_t offset) { meter.update(static_cast<int64_t>(offset >> 20)); });
  meter.finish();
  if (spans.size() >= kIndexWorthCaching) write_cached_index(cache, key, spans);
  return spans;
}

// ---- writing ------------------------------------------------------------------------------------

TFRecordWriter::TFRecordWriter(const std::string& path) : out_(path) {}

void TFRecordWriter::write(const void* payload, uint64_t size) {
  SG2_CHECK(size <= kMaxRecordBytes, "'{}': record {} of {} bytes exceeds the limit of {}", out_.path(), records_, size,
            kMaxRecordBytes);
  std::vector<uint8_t> bytes;
  bytes.reserve(size + kRecordHeaderBytes + kRecordFooterBytes);
  append_record(bytes, payload, size);
  out_.write(bytes.data(), bytes.size());
  ++records_;
}

void TFRecordWriter::close() {
  if (out_.is_open()) out_.commit();
}

}  // namespace sg2::data
