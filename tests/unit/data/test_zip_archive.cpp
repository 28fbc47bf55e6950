// ZIP archives damaged byte by byte, and one written as Python's zipfile writes 65535 entries.
#include "test_support.h"

#include "sg2/core/files.h"
#include "sg2/data/zip_archive.h"

namespace sg2::data {
namespace {

uint64_t get_le(const std::vector<uint8_t>& bytes, size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | bytes.at(at + size_t(i));
  return value;
}

void set_le(std::vector<uint8_t>& bytes, size_t at, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) bytes.at(at + size_t(i)) = uint8_t(value >> (8 * i));
}

// An archive of `count` one-byte entries named by number, written by our writer.
std::vector<uint8_t> numbered_archive(const std::string& path, int count) {
  ZipWriter writer(path);
  for (int i = 0; i < count; ++i) {
    const uint8_t byte = uint8_t(i);
    writer.add(fmt::format("{:05d}", i), &byte, 1);
  }
  writer.close();
  return read_file_bytes(path);
}

constexpr size_t kEndBytes = 22, kZip64RecordsBytes = 56 + 20;

// Offset of the first central directory entry, from the (plain) end record.
size_t first_directory_entry(const std::vector<uint8_t>& archive) {
  return size_t(get_le(archive, archive.size() - kEndBytes + 16, 4));
}

TEST(ZipReader, DamagedDirectoryEntriesAreErrorsNamingTheArchive) {
  test::TempDir dir;
  const std::string path = dir.file("two.zip");
  std::vector<uint8_t> archive = numbered_archive(path, 2);
  ASSERT_EQ(ZipReader(path).entries().size(), 2u);
  set_le(archive, first_directory_entry(archive) + 28, 0x7fff, 2);  // entry 0's name runs past the directory
  test::write_file_bytes(path, archive);
  const std::string message = test::error_message([&] { ZipReader{path}; });
  EXPECT_NE(message.find("'" + path + "' central directory: truncated name"), std::string::npos) << message;
}

TEST(ZipReader, StoredSizesPastTheFileAreRefusedBeforeAllocating) {
  test::TempDir dir;
  const std::string path = dir.file("two.zip");
  std::vector<uint8_t> archive = numbered_archive(path, 2);
  const size_t entry = first_directory_entry(archive);
  set_le(archive, entry + 10, 8, 2);            // deflated,
  set_le(archive, entry + 20, 0xfffffffe, 4);  // 4 GiB of it in a file of a few hundred bytes
  test::write_file_bytes(path, archive);
  const ZipReader reader(path);
  const std::string message = test::error_message([&] { reader.read(reader.entries()[0]); });
  EXPECT_NE(message.find("the data of 00000 at byte offset 35 (4294967294 bytes) lies beyond the end of the file"),
            std::string::npos)
      << message;
  EXPECT_EQ(reader.read(reader.entries()[1]), std::vector<uint8_t>{1});
}

// Python's zipfile writes ZIP64 records from 65536 entries on; at 65535 the plain end record's
// count is 0xffff and no ZIP64 locator follows. Our writer adds the records at 65535 already.
TEST(ZipReader, ReadsA65535EntryArchiveWithAndWithoutZip64Records) {
  test::TempDir dir;
  const std::string with_zip64 = dir.file("zip64.zip"), plain = dir.file("plain.zip");
  std::vector<uint8_t> archive = numbered_archive(with_zip64, 65535);
  ASSERT_EQ(get_le(archive, archive.size() - kEndBytes - 20, 4), 0x07064b50u);  // the ZIP64 locator
  archive.erase(archive.end() - kEndBytes - kZip64RecordsBytes, archive.end() - kEndBytes);
  test::write_file_bytes(plain, archive);
  ASSERT_EQ(get_le(archive, archive.size() - kEndBytes + 10, 2), 0xffffu);
  for (const std::string& path : {with_zip64, plain}) {
    const ZipReader reader(path);
    ASSERT_EQ(reader.entries().size(), 65535u) << path;
    EXPECT_EQ(reader.read(*reader.find("65534")), std::vector<uint8_t>{uint8_t(65534)}) << path;
  }
  set_le(archive, archive.size() - kEndBytes + 16, 0xffffffff, 4);  // a ZIP64 marker without a locator
  test::write_file_bytes(plain, archive);
  EXPECT_NE(test::error_message([&] { ZipReader{plain}; }).find("ZIP64 locator missing"), std::string::npos);
}

}  // namespace
}  // namespace sg2::data
