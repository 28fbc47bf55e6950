// The TFRecord container, tf.train.Example payloads, .npy labels and their errors on bad input.
#include "test_support.h"

#include "sg2/core/files.h"
#include "sg2/data/crc32c.h"
#include "sg2/data/example.h"
#include "sg2/data/npy.h"
#include "sg2/data/tfrecord.h"
#include "example.pb.h"

#include <fstream>
#include <random>

namespace sg2::data {
namespace {

// Three records of a tiny 1x2x2 image each, written by our writer.
std::string write_three_records(const test::TempDir& dir) {
  const std::string path = dir.file("three.tfrecords");
  TFRecordWriter writer(path);
  for (uint8_t k = 0; k < 3; ++k) {
    const uint8_t pixels[4] = {k, uint8_t(k + 1), uint8_t(k + 2), uint8_t(k + 3)};
    const std::string payload = encode_image_example(pixels, 1, 2, 2);
    writer.write(payload.data(), payload.size());
  }
  writer.close();
  return path;
}

std::string read_error(const std::string& path) {
  return test::error_message([&] {
    TFRecordFile file(path);
    const auto spans = file.scan();
    std::vector<uint8_t> payload;
    for (size_t i = 0; i < spans.size(); ++i) {
      file.read(int64_t(i), spans[i], payload);
      decode_image_example(payload.data(), payload.size(), fmt::format("'{}': record {}", path, i));
    }
  });
}

TEST(Crc32c, KnownVectorsAndPortableEqualsHardware) {
  // The check value of CRC-32C (RFC 3720 / iSCSI): "123456789" -> 0xe3069283; 32 zero bytes -> 0x8a9136aa.
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c_portable("123456789", 9), 0xe3069283u);
  const std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c_portable(zeros.data(), zeros.size()), 0x8a9136aau);
  std::mt19937 random(7);
  std::vector<uint8_t> buffer(1000);
  for (auto& b : buffer) b = uint8_t(random());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t size : {0, 1, 7, 8, 9, 63, 500, 990}) {
      EXPECT_EQ(crc32c(buffer.data() + start, size), crc32c_portable(buffer.data() + start, size)) << start << " " << size;
    }
  }
  // Incremental = whole.
  EXPECT_EQ(crc32c(buffer.data() + 10, 90, crc32c(buffer.data(), 10)), crc32c(buffer.data(), 100));
}

TEST(TFRecord, RecordLayoutFollowsTheFormat) {
  std::vector<uint8_t> bytes;
  const char payload[] = "abc";
  append_record(bytes, payload, 3);
  ASSERT_EQ(bytes.size(), 8u + 4u + 3u + 4u);
  EXPECT_EQ(bytes[0], 3);  // little-endian length
  for (int i = 1; i < 8; ++i) EXPECT_EQ(bytes[size_t(i)], 0);
  const uint32_t crc = crc32c(bytes.data(), 8);
  const uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  EXPECT_EQ(bytes[8] | bytes[9] << 8 | bytes[10] << 16 | uint32_t(bytes[11]) << 24, masked);
  EXPECT_EQ(std::string(bytes.begin() + 12, bytes.begin() + 15), "abc");
}

TEST(TFRecord, WriteScanReadRoundTrip) {
  test::TempDir dir;
  const std::string path = write_three_records(dir);
  TFRecordFile file(path);
  const auto spans = file.scan();
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].offset, 0u);
  EXPECT_EQ(spans[2].end(), file.file_size());
  std::vector<uint8_t> payload;
  for (int k = 0; k < 3; ++k) {
    file.read(k, spans[size_t(k)], payload);
    const ImageRecord image = decode_image_example(payload.data(), payload.size(), "test");
    EXPECT_EQ(image.channels, 1);
    EXPECT_EQ(image.height, 2);
    EXPECT_EQ(image.pixels, (std::vector<uint8_t>{uint8_t(k), uint8_t(k + 1), uint8_t(k + 2), uint8_t(k + 3)}));
  }
  int visited = 0;
  const auto bytes = read_file_bytes(path);
  parse_records(bytes.data(), bytes.size(), path, [&](int64_t, const uint8_t*, uint64_t) { ++visited; });
  EXPECT_EQ(visited, 3);
}

TEST(TFRecord, CorruptionIsReportedWithFileRecordAndOffset) {
  test::TempDir dir;
  const std::string path = write_three_records(dir);
  const std::vector<uint8_t> good = read_file_bytes(path);
  TFRecordFile reference(path);
  const RecordSpan second = reference.scan()[1];
  auto corrupt = [&](uint64_t at, int delta) {
    std::vector<uint8_t> bytes = good;
    bytes[at] = uint8_t(bytes[at] + delta);
    const std::string bad = dir.file("bad.tfrecords");
    test::write_file_bytes(bad, bytes);
    return read_error(bad);
  };
  const std::string where = fmt::format("record 1 at byte offset {}", second.offset);
  EXPECT_NE(corrupt(second.offset, 1).find(where + ": length CRC mismatch"), std::string::npos);
  EXPECT_NE(corrupt(second.offset + 8, 1).find(where + ": length CRC mismatch"), std::string::npos);
  EXPECT_NE(corrupt(second.payload_offset() + 5, 1).find(where + ": payload CRC mismatch"), std::string::npos);
  EXPECT_NE(corrupt(second.end() - 2, 1).find(where + ": payload CRC mismatch"), std::string::npos);

  std::vector<uint8_t> cut(good.begin(), good.end() - 3);
  test::write_file_bytes(dir.file("cut.tfrecords"), cut);
  EXPECT_NE(read_error(dir.file("cut.tfrecords")).find("record 2 at byte offset"), std::string::npos);
  EXPECT_NE(read_error(dir.file("cut.tfrecords")).find("truncated record"), std::string::npos);
  cut.assign(good.begin(), good.begin() + long(second.offset) + 5);
  test::write_file_bytes(dir.file("cut.tfrecords"), cut);
  EXPECT_NE(read_error(dir.file("cut.tfrecords")).find("truncated header"), std::string::npos);
}

TEST(TFRecord, HugeLengthsAreRefusedBeforeAllocating) {
  test::TempDir dir;
  for (uint64_t length : {uint64_t(1) << 40, uint64_t(1) << 20}) {
    std::vector<uint8_t> bytes(8);
    for (int i = 0; i < 8; ++i) bytes[size_t(i)] = uint8_t(length >> (8 * i));
    const uint32_t masked = masked_crc32c(bytes.data(), 8);
    for (int i = 0; i < 4; ++i) bytes.push_back(uint8_t(masked >> (8 * i)));
    bytes.resize(bytes.size() + 100, 0);
    test::write_file_bytes(dir.file("huge.tfrecords"), bytes);
    const std::string message = read_error(dir.file("huge.tfrecords"));
    EXPECT_NE(message.find(length > kMaxRecordBytes ? "exceeds the limit" : "truncated record"), std::string::npos)
        << message;
  }
}

// Builds an Example feature by feature, so that each can be given the wrong type or size.
std::string example_with(const std::function<void(tfexample::Example&)>& edit) {
  tfexample::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  for (int64_t v : {1, 2, 2}) features["shape"].mutable_int64_list()->add_value(v);
  features["data"].mutable_bytes_list()->add_value(std::string(4, '\x07'));
  edit(example);
  return example.SerializeAsString();
}

std::string decode_error(const std::string& payload) {
  return test::error_message([&] {
    decode_image_example(reinterpret_cast<const uint8_t*>(payload.data()), payload.size(), "'f': record 7");
  });
}

// The same image is the same bytes, as a dataset's checksum needs: the Example's feature map is written
// in key order ('data', then 'shape'), not in the map's per-instance (randomised) iteration order.
TEST(Example, EncodingIsDeterministic) {
  const uint8_t pixels[6] = {1, 2, 3, 4, 5, 6};
  const std::string first = encode_image_example(pixels, 1, 2, 3);
  for (int i = 0; i < 32; ++i) ASSERT_EQ(encode_image_example(pixels, 1, 2, 3), first) << "encoding " << i;
  EXPECT_LT(first.find("data"), first.find("shape"));
  const ImageRecord decoded = decode_image_example(reinterpret_cast<const uint8_t*>(first.data()), first.size(), "t");
  EXPECT_EQ(decoded.pixels, std::vector<uint8_t>(pixels, pixels + 6));
}

TEST(Example, WrongFeaturesAreClearErrors) {
  using tfexample::Example;
  EXPECT_EQ(decode_error(example_with([](Example&) {})), "");
  EXPECT_NE(decode_error("\xff\xff\xff\xff not a protobuf").find("record 7: the payload (19 bytes) is not a tf.train.Example"),
            std::string::npos);
  EXPECT_NE(decode_error("").find("no feature 'shape'"), std::string::npos);
  auto features = [](Example& e) -> auto& { return *e.mutable_features()->mutable_feature(); };
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e)["shape"].mutable_bytes_list()->add_value("x"); }))
                .find("feature 'shape' is a bytes_list, expected a int64_list"),
            std::string::npos);
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e)["data"].mutable_float_list()->add_value(1); }))
                .find("feature 'data' is a float_list, expected a bytes_list"),
            std::string::npos);
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e).erase("data"); })).find("no feature 'data'"),
            std::string::npos);
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e)["data"].mutable_bytes_list()->add_value("y"); }))
                .find("feature 'data' has 2 elements, expected 1"),
            std::string::npos);
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e)["shape"].mutable_int64_list()->set_value(1, 3); }))
                .find("'data' has 4 bytes but shape [1, 3, 2] needs 6"),
            std::string::npos);
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e)["shape"].mutable_int64_list()->set_value(0, -1); }))
                .find("impossible image shape [-1, 2, 2]"),
            std::string::npos);
  EXPECT_NE(decode_error(example_with([&](Example& e) { features(e)["shape"].mutable_int64_list()->add_value(5); }))
                .find("'shape' has 4 values, expected 3"),
            std::string::npos);
}

// The fuzz corpus seeds (tests/fuzz/corpus/records) are hand-built files of each kind of damage;
// each must give its own error, and the good ones must parse.
TEST(FuzzCorpus, SeedsParseOrGiveTheirError) {
  const std::string corpus = test::source_dir() + "/tests/fuzz/corpus/records/";
  auto first_error = [&](const std::string& name) {
    const std::vector<uint8_t> bytes = read_file_bytes(corpus + name);
    return test::error_message([&] {
      parse_records(bytes.data(), bytes.size(), name, [&](int64_t record, const uint8_t* payload, uint64_t size) {
        decode_image_example(payload, size, fmt::format("'{}': record {}", name, record));
      });
    });
  };
  EXPECT_EQ(first_error("one_record"), "");
  EXPECT_EQ(first_error("three_records"), "");
  EXPECT_EQ(first_error("rgb_4x4"), "");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"truncated", "record 1 at byte offset 54: truncated record: it needs 54 bytes but only 49 remain"},
      {"bad_length_crc", "record 0 at byte offset 0: length CRC mismatch"},
      {"bad_payload_crc", "payload CRC mismatch"},
      {"flipped_payload", "payload CRC mismatch"},
      {"huge_length", "exceeds the limit"},
      {"not_an_example", "is not a tf.train.Example"},
      {"shape_as_bytes", "feature 'shape' is a bytes_list"},
      {"data_as_floats", "feature 'data' is a float_list"},
      {"size_mismatch", "needs 9"},
      {"negative_shape", "impossible image shape [-1, 2, 2]"},
      {"two_data_elements", "has 2 elements, expected 1"}};
  for (const auto& [name, message] : expected) EXPECT_NE(first_error(name).find(message), std::string::npos) << name << ": " << first_error(name);
}

TEST(Npy, RoundTripAndErrors) {
  test::TempDir dir;
  FloatMatrix labels{3, 2, {1, 0, 0, 1, 0.5f, 0.5f}};
  write_npy_float32(dir.file("l.npy"), labels);
  const FloatMatrix back = read_npy_float32(dir.file("l.npy"));
  EXPECT_EQ(back.rows, 3);
  EXPECT_EQ(back.cols, 2);
  EXPECT_EQ(back.values, labels.values);
  EXPECT_EQ(read_file_bytes(dir.file("l.npy")).size() % 64, 24u);  // 64-byte aligned header + 24 bytes of data
  std::vector<uint8_t> bytes = read_file_bytes(dir.file("l.npy"));
  bytes.resize(bytes.size() - 4);
  test::write_file_bytes(dir.file("short.npy"), bytes);
  EXPECT_NE(test::error_message([&] { read_npy_float32(dir.file("short.npy")); }).find("needs 24 bytes of data but the file has 20"),
            std::string::npos);
  // Header numbers whose product overflows, or too long to parse, are refused by name.
  const auto with_shape = [&](const std::string& name, const std::string& shape) {
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }\n";
    std::vector<uint8_t> npy = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, uint8_t(header.size()), 0};
    npy.insert(npy.end(), header.begin(), header.end());
    test::write_file_bytes(dir.file(name), npy);
    return test::error_message([&] { read_npy_float32(dir.file(name)); });
  };
  const std::string huge = with_shape("huge.npy", "(999999999999999999, 5)");
  EXPECT_NE(huge.find("huge.npy': shape (999999999999999999, 5) needs over 2^64 bytes"), std::string::npos) << huge;
  const std::string long_number = with_shape("long.npy", "(12345678901234567890, 1)");
  EXPECT_NE(long_number.find("long.npy': expected a 2-D array"), std::string::npos) << long_number;
  test::write_file_bytes(dir.file("junk.npy"), {1, 2, 3});
  EXPECT_NE(test::error_message([&] { read_npy_float32(dir.file("junk.npy")); }).find("not a NumPy .npy file"),
            std::string::npos);
}

}  // namespace
}  // namespace sg2::data
