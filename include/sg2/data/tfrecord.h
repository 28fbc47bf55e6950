#pragma once
// The TFRecord container (docs/architecture.md, "File formats"): per record a little-endian uint64 length, the
// masked CRC-32C of those 8 bytes, the payload, and the masked CRC-32C of the payload. Every read
// checks both CRCs; every error names the file, the record number and its byte offset. Lengths are
// checked against what is left of the file (and kMaxRecordBytes) before anything is allocated, so
// hostile files cannot make a reader allocate without bound or read out of bounds.

#include "sg2/data/atomic_file.h"
#include "sg2/data/read_only_file.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace sg2::data {

constexpr uint64_t kRecordHeaderBytes = 12;  // length + its CRC
constexpr uint64_t kRecordFooterBytes = 4;   // payload CRC
constexpr uint64_t kMaxRecordBytes = uint64_t(1) << 30;

struct RecordSpan {
  uint64_t offset = 0;  // of the record's header in the file
  uint64_t length = 0;  // of the payload
  uint64_t payload_offset() const { return offset + kRecordHeaderBytes; }
  uint64_t end() const { return offset + kRecordHeaderBytes + length + kRecordFooterBytes; }
};

// Walks a whole TFRecord stream held in memory, checking every CRC, and calls visit(record,
// payload, size) for each record. `name` is used in error messages. (The fuzz target's entry.)
using RecordVisitor = std::function<void(int64_t record, const uint8_t* payload, uint64_t size)>;
void parse_records(const uint8_t* data, uint64_t size, const std::string& name, const RecordVisitor& visit);

// Random-access reader of one .tfrecords file. read() is thread-safe (pread).
class TFRecordFile {
 public:
  explicit TFRecordFile(const std::string& path) : file_(path, "TFRecord file") {}

  const std::string& path() const { return file_.path(); }
  uint64_t file_size() const { return file_.size(); }

  // The record offsets by scanning the headers (length CRCs checked, payloads skipped); `progress`
  // (optional) gets the byte offset reached after each record.
  std::vector<RecordSpan> scan(const std::function<void(uint64_t offset)>& progress = {}) const;
  // The payload of record `record` at `span`, both CRCs checked.
  void read(int64_t record, const RecordSpan& span, std::vector<uint8_t>& payload) const;

 private:
  ReadOnlyFile file_;
};

// The record index of a file: loaded from `<file>.sg2index` when that cache matches the file's size
// and modification time, otherwise built by scan() and (for files of 1000+ records, where it pays)
// written beside the file when the directory is writable.
std::vector<RecordSpan> load_record_index(const TFRecordFile& file);

// Writes records to `path` through a temporary file renamed by close(), so a crash never leaves a
// half-written file under the final name.
class TFRecordWriter {
 public:
  explicit TFRecordWriter(const std::string& path);
  void write(const void* payload, uint64_t size);
  void close();
  int64_t records() const { return records_; }

 private:
  AtomicFileWriter out_;  // removes the temporary file when close() was not reached
  int64_t records_ = 0;
};

// Encodes one record (header, payload, footer) into `out` (appended).
void append_record(std::vector<uint8_t>& out, const void* payload, uint64_t size);

}  // namespace sg2::data
