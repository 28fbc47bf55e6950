// Fashion-MNIST from Debian's IDX files, and IDX errors on broken files.
#include "sg2/core/error.h"
#include "sg2/data/dataset.h"
#include "sg2/data/fashion_mnist.h"
#include "test_support.h"

#include <zlib.h>

#include <fstream>

namespace sg2::data {
namespace {

std::vector<uint8_t> idx_header(uint8_t type, std::vector<uint32_t> dims) {
  std::vector<uint8_t> out{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  return out;
}

TEST(FashionMnist, ReadsDebianFilesPaddedTo32) {
  FashionMnistDataset train(kFashionMnistDir, "train", /*use_labels=*/true, 0);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(train.resolution(), 32);
  EXPECT_EQ(train.shape().channels, 1);
  EXPECT_EQ(train.label_dim(), 10);
  EXPECT_EQ(train.class_of(0), 9);  // the first training image is an ankle boot
  std::vector<uint8_t> image(32 * 32);
  train.read_image(0, image.data());
  int border = 0, inside = 0;
  for (int y = 0; y < 32; ++y) {
    for (int x = 0; x < 32; ++x) {
      const bool edge = y < 2 || y >= 30 || x < 2 || x >= 30;
      (edge ? border : inside) += image[y * 32 + x];
    }
  }
  EXPECT_EQ(border, 0);  // zero padding around the 28x28 image
  EXPECT_GT(inside, 10000);
  std::vector<float> label(10);
  train.read_label(0, label.data());
  EXPECT_EQ(label[9], 1.0f);
  EXPECT_EQ(std::accumulate(label.begin(), label.end(), 0.0f), 1.0f);
  EXPECT_EQ(FashionMnistDataset(kFashionMnistDir, "test", false, 0).size(), 10000);
  EXPECT_EQ(FashionMnistDataset(kFashionMnistDir, "all", false, 100).size(), 100);
}

TEST(FashionMnist, OpenDatasetChecksResolution) {
  DatasetOptions options;
  options.path = kFashionMnistDir;
  options.resolution = 64;
  const std::string message = test::error_message([&] { open_dataset(options); });
  EXPECT_NE(message.find("data.resolution = 64"), std::string::npos) << message;
  EXPECT_NE(message.find("32x32"), std::string::npos) << message;
  options.resolution = 0;
  options.path = "/nonexistent";
  EXPECT_NE(test::error_message([&] { open_dataset(options); }).find("/nonexistent"), std::string::npos);
}

TEST(IdxFile, RejectsBrokenFilesNamingThem) {
  test::TempDir dir;
  auto header = idx_header(0x08, {2, 3, 3});
  std::vector<uint8_t> full = header;
  full.resize(header.size() + 18, 7);
  test::write_file_bytes(dir.file("ok"), full);
  const IdxArray ok = read_idx_file(dir.file("ok"));
  EXPECT_EQ(ok.dims, (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(ok.data.size(), 18u);

  std::vector<uint8_t> truncated(full.begin(), full.end() - 5);
  test::write_file_bytes(dir.file("truncated"), truncated);
  std::string message = test::error_message([&] { read_idx_file(dir.file("truncated")); });
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("promises 18 bytes"), std::string::npos) << message;

  auto wrong_type = idx_header(0x0D, {2});
  wrong_type.resize(wrong_type.size() + 8);
  test::write_file_bytes(dir.file("float"), wrong_type);
  EXPECT_NE(test::error_message([&] { read_idx_file(dir.file("float")); }).find("0x0d"), std::string::npos);

  test::write_file_bytes(dir.file("short"), {0, 0});
  EXPECT_NE(test::error_message([&] { read_idx_file(dir.file("short")); }).find("too short"), std::string::npos);
}

TEST(IdxFile, ReadsGzipAndReportsCorruptGzip) {
  test::TempDir dir;
  auto bytes = idx_header(0x08, {4});
  bytes.insert(bytes.end(), {1, 2, 3, 4});
  gzFile f = gzopen(dir.file("a.gz").c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  EXPECT_EQ(read_idx_file(dir.file("a.gz")).data, (std::vector<uint8_t>{1, 2, 3, 4}));

  std::ifstream in(dir.file("a.gz"), std::ios::binary);
  std::vector<uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() - 6);  // cut the gzip trailer and some data
  test::write_file_bytes(dir.file("cut.gz"), gz);
  const std::string message = test::error_message([&] { read_idx_file(dir.file("cut.gz")); });
  EXPECT_NE(message.find("cut.gz"), std::string::npos) << message;
}

}  // namespace
}  // namespace sg2::data
