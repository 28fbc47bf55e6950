// Dataset directories and archives written and read back, sharding and the prefetching loader.
#include "test_support.h"

#include "sg2/data/dataset_tool.h"
#include "sg2/data/dataset_writer.h"
#include "sg2/data/image_archive_dataset.h"
#include "sg2/data/npy.h"
#include "sg2/data/prefetch_loader.h"
#include "sg2/data/tfrecord_dataset.h"

#include <cmath>
#include <mutex>
#include <numeric>
#include <filesystem>
#include <random>
#include <fstream>
#include <set>

namespace sg2::data {
namespace {

namespace fs = std::filesystem;

// Random images [C, side, side] with one-hot labels of 4 classes, held in memory.
class RandomImages : public Dataset {
 public:
  RandomImages(int64_t count, int64_t channels, int64_t side) : count_(count), shape_{channels, side, side} {
    std::mt19937 random(123);
    pixels_.resize(size_t(count * shape_.bytes()));
    for (auto& p : pixels_) p = uint8_t(random());
  }
  std::string name() const override { return "random"; }
  int64_t size() const override { return count_; }
  ImageShape shape() const override { return shape_; }
  int64_t label_dim() const override { return 4; }
  void read_image(int64_t index, uint8_t* out) const override {
    std::copy_n(pixels_.begin() + index * shape_.bytes(), shape_.bytes(), out);
  }
  void read_label(int64_t index, float* out) const override {
    std::fill(out, out + 4, 0.0f);
    out[index % 4] = 1.0f;
  }
  std::vector<uint8_t> image(int64_t index) const {
    std::vector<uint8_t> out(size_t(shape_.bytes()));
    read_image(index, out.data());
    return out;
  }

 private:
  int64_t count_;
  ImageShape shape_;
  std::vector<uint8_t> pixels_;
};

std::vector<uint8_t> image_of(const Dataset& dataset, int64_t index) {
  std::vector<uint8_t> out(size_t(dataset.shape().bytes()));
  dataset.read_image(index, out.data());
  return out;
}

// Level k computed independently: the mean of each 2^m x 2^m block of the full image in double,
// rounded half to even (exact here: block means of 8-bit values over <= 64 pixels are exact).
std::vector<uint8_t> block_mean(const std::vector<uint8_t>& full, int64_t channels, int64_t side, int64_t factor) {
  const int64_t out_side = side / factor;
  std::vector<uint8_t> out;
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < out_side; ++y) {
      for (int64_t x = 0; x < out_side; ++x) {
        double sum = 0;
        for (int64_t dy = 0; dy < factor; ++dy) {
          for (int64_t dx = 0; dx < factor; ++dx) sum += full[size_t((c * side + y * factor + dy) * side + x * factor + dx)];
        }
        out.push_back(uint8_t(std::nearbyint(sum / double(factor * factor))));
      }
    }
  }
  return out;
}

TEST(NumpyShuffle, MatchesNumpyRandomState123) {
  // numpy: o = np.arange(10); np.random.RandomState(123).shuffle(o)
  EXPECT_EQ(stylegan2_shuffled_order(10), (std::vector<int64_t>{4, 0, 7, 5, 8, 3, 1, 6, 9, 2}));
  const auto order = stylegan2_shuffled_order(70000);  // numpy: o[:5] and o[-3:] of arange(70000)
  EXPECT_EQ(std::vector<int64_t>(order.begin(), order.begin() + 5), (std::vector<int64_t>{21971, 16953, 48447, 42344, 4376}));
  EXPECT_EQ(std::vector<int64_t>(order.end() - 3, order.end()), (std::vector<int64_t>{17730, 28030, 15725}));
}

TEST(TFRecordDataset, EveryLevelRoundTripsAndIsTheBoxAverageOfTheFullImage) {
  test::TempDir dir;
  const RandomImages source(37, 3, 32);
  const std::string out = dir.file("rand");
  write_tfrecord_dataset(source, out, WriteOptions{});
  const TFRecordLayout layout = find_tfrecord_layout(out);
  EXPECT_EQ(layout.name, "rand");
  EXPECT_EQ(layout.levels.size(), 4u);  // r02 .. r05
  EXPECT_TRUE(layout.missing_levels().empty());
  const std::vector<int64_t> order = stylegan2_shuffled_order(37);
  for (int64_t side = 32; side >= 4; side /= 2) {
    const TFRecordDataset level(out, true, 0, side);
    ASSERT_EQ(level.size(), 37);
    ASSERT_EQ(level.shape().height, side);
    for (int64_t i = 0; i < 37; ++i) {
      const std::vector<uint8_t> full = source.image(order[size_t(i)]);
      EXPECT_EQ(image_of(level, i), block_mean(full, 3, 32, 32 / side)) << "level " << side << " record " << i;
      float label[4];
      level.read_label(i, label);
      EXPECT_EQ(label[order[size_t(i)] % 4], 1.0f) << "labels follow the shuffled records";
    }
  }
}

TEST(TFRecordDataset, UnshuffledKeepsTheSourceOrder) {
  test::TempDir dir;
  const RandomImages source(5, 1, 8);
  WriteOptions options;
  options.shuffle = false;
  write_tfrecord_dataset(source, dir.file("plain"), options);
  const TFRecordDataset dataset(dir.file("plain"), false, 0);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(image_of(dataset, i), source.image(i));
}

TEST(TFRecordDataset, BadDirectoriesAreClearErrors) {
  test::TempDir dir;
  const RandomImages source(8, 1, 16);
  const std::string out = dir.file("d");
  write_tfrecord_dataset(source, out, WriteOptions{});
  // A missing requested level, with what there is.
  fs::remove(out + "/d-r03.tfrecords");
  EXPECT_NE(test::error_message([&] { TFRecordDataset(out, false, 0, 8); }).find("no level for resolution 8 (no d-r03.tfrecords"),
            std::string::npos);
  EXPECT_EQ(find_tfrecord_layout(out).missing_levels(), std::vector<int>{3});
  // Labels that do not match the records one to one.
  write_npy_float32(out + "/d-rxx.labels", FloatMatrix{7, 4, std::vector<float>(28, 0.0f)});
  EXPECT_NE(test::error_message([&] { TFRecordDataset(out, true, 0); }).find("has 7 labels but"), std::string::npos);
  fs::remove(out + "/d-rxx.labels");
  DatasetOptions labelled;
  labelled.path = out;
  labelled.use_labels = true;
  const std::string unlabelled = test::error_message([&] { open_dataset(labelled); });
  EXPECT_NE(unlabelled.find("data.use_labels is true: '" + out + "' has no class labels"), std::string::npos)
      << unlabelled;
  // The resolution and channels the config expects, against what the data has.
  DatasetOptions options;
  options.path = out;
  options.resolution = 32;
  EXPECT_NE(test::error_message([&] { open_dataset(options); }).find("data.resolution = 32 but the dataset at"),
            std::string::npos);
  options.resolution = 16;
  options.channels = 3;
  EXPECT_NE(test::error_message([&] { open_dataset(options); }).find("data.channels = 3 but the dataset"), std::string::npos);
  // Two datasets in one directory.
  fs::copy_file(out + "/d-r04.tfrecords", out + "/e-r04.tfrecords");
  EXPECT_NE(test::error_message([&] { find_tfrecord_layout(out); }).find("two datasets"), std::string::npos);
}

TEST(TFRecordDataset, IndexCacheIsWrittenAndTrusted) {
  test::TempDir dir;
  const RandomImages source(1200, 1, 4);
  write_tfrecord_dataset(source, dir.file("many"), WriteOptions{});
  const std::string file = dir.file("many") + "/many-r02.tfrecords";
  const TFRecordDataset first(dir.file("many"), false, 0);
  ASSERT_TRUE(fs::exists(file + ".sg2index"));
  const TFRecordDataset second(dir.file("many"), false, 0);  // through the cache
  for (int64_t i : {0, 599, 1199}) EXPECT_EQ(image_of(second, i), image_of(first, i));
  fs::resize_file(file + ".sg2index", 100);  // a damaged cache is ignored and rebuilt
  const TFRecordDataset third(dir.file("many"), false, 0);
  EXPECT_EQ(image_of(third, 1199), image_of(first, 1199));

  // The cache is what a load reads: one that still tiles the file and matches its size and time but
  // joins records 0 and 1 into one span makes record 0's read fail, naming the index.
  {
    std::fstream cache(file + ".sg2index", std::ios::in | std::ios::out | std::ios::binary);
    const std::streamoff count_at = 8 + 16;  // after the magic and the key (size, time)
    uint64_t count = 0;
    RecordSpan span0, span1;
    cache.seekg(count_at);
    cache.read(reinterpret_cast<char*>(&count), 8);
    cache.read(reinterpret_cast<char*>(&span0), sizeof span0);
    cache.read(reinterpret_cast<char*>(&span1), sizeof span1);
    ASSERT_EQ(count, 1200u);
    span0.length = span1.end() - span0.offset - kRecordHeaderBytes - kRecordFooterBytes;  // over both records
    std::vector<char> rest(size_t(count - 2) * sizeof(RecordSpan));
    cache.read(rest.data(), std::streamsize(rest.size()));
    count -= 1;
    cache.seekp(count_at);
    cache.write(reinterpret_cast<const char*>(&count), 8);
    cache.write(reinterpret_cast<const char*>(&span0), sizeof span0);
    cache.write(rest.data(), std::streamsize(rest.size()));
  }
  fs::resize_file(file + ".sg2index", uint64_t(8 + 16 + 8) + 1199 * sizeof(RecordSpan));
  const std::string joined = test::error_message([&] { image_of(TFRecordDataset(dir.file("many"), false, 0), 0); });
  EXPECT_NE(joined.find("record 0 at byte offset 0: length"), std::string::npos) << joined;
  EXPECT_NE(joined.find("differs from the index's"), std::string::npos) << joined;

  // A changed file (another dataset written over it) is indexed again, the stale cache ignored.
  write_tfrecord_dataset(RandomImages(1100, 1, 4), dir.file("other"), WriteOptions{});
  fs::copy_file(dir.file("other") + "/other-r02.tfrecords", file, fs::copy_options::overwrite_existing);
  fs::copy_file(dir.file("other") + "/other-rxx.labels", dir.file("many") + "/many-rxx.labels",
                fs::copy_options::overwrite_existing);
  const TFRecordDataset changed(dir.file("many"), false, 0);
  EXPECT_EQ(changed.size(), 1100);
  EXPECT_EQ(image_of(changed, 1099), image_of(TFRecordDataset(dir.file("other"), false, 0), 1099));
}

TEST(ZipDataset, RoundTripWithClassLabels) {
  test::TempDir dir;
  const RandomImages source(1003, 3, 8);
  write_zip_dataset(source, dir.file("set.zip"), WriteOptions{});
  const ImageArchiveDataset zip(dir.file("set.zip"), true, 0);
  ASSERT_EQ(zip.size(), 1003);
  ASSERT_EQ(zip.label_dim(), 4);
  const ImageArchiveDataset first_two(dir.file("set.zip"), true, 2);  // classes 0 and 1 of the archive's 4
  EXPECT_EQ(first_two.size(), 2);
  EXPECT_EQ(first_two.label_dim(), 4);
  for (int64_t i : {0, 999, 1000, 1002}) {
    EXPECT_EQ(image_of(zip, i), source.image(i));
    float label[4];
    zip.read_label(i, label);
    EXPECT_EQ(label[i % 4], 1.0f);
  }
  // ... and converted to TFRecords, in order.
  WriteOptions keep;
  keep.shuffle = false;
  write_tfrecord_dataset(zip, dir.file("conv"), keep);
  const TFRecordDataset tfr(dir.file("conv"), true, 0);
  EXPECT_EQ(image_of(tfr, 1002), source.image(1002));
}

TEST(ImageFolder, PngFolderWithDatasetJsonAndResizing) {
  test::TempDir dir;
  const std::string root = dir.file("imgs");
  fs::create_directories(root + "/sub");
  Image image{6, 4, 3, std::vector<uint8_t>(72, 200)};
  write_png(root + "/b.png", image);
  write_png(root + "/sub/a.png", image);
  std::ofstream(root + "/dataset.json") << R"({"labels": [["b.png", [0.5, 1.5]], ["sub/a.png", [2, 3]]]})";
  ImageTransform transform;
  transform.resolution = 4;
  const ImageArchiveDataset dataset(root, true, 0, transform);
  EXPECT_EQ(dataset.shape().height, 4);
  EXPECT_EQ(image_of(dataset, 0), std::vector<uint8_t>(48, 200));  // a flat image stays flat
  float label[2];
  dataset.read_label(0, label);  // sorted: "b.png" < "sub/a.png"
  EXPECT_EQ(label[1], 1.5f);
  // Without a transform every image must have the first one's shape.
  write_png(root + "/c.png", Image{2, 2, 3, std::vector<uint8_t>(12, 1)});
  const ImageArchiveDataset raw(root, false, 0);
  std::vector<uint8_t> buffer(size_t(raw.shape().bytes()));
  EXPECT_NE(test::error_message([&] { raw.read_image(1, buffer.data()); }).find("c.png' is 2x2 with 3 channels but"),
            std::string::npos);
  std::ofstream(root + "/dataset.json") << R"({"labels": [["b.png", 1]]})";
  EXPECT_NE(test::error_message([&] { ImageArchiveDataset(root, true, 0); }).find("no label for 'c.png'"),
            std::string::npos);
}

// --resolution / --channels of `stylegan2_dataset create` apply to every source, Fashion-MNIST's and
// TFRecords' pixels too (not only image files'): Fashion-MNIST rendered at 64x64 RGB, labels kept.
TEST(DatasetTool, EverySourceTakesTheResolutionAndChannels) {
  SourceOptions options;
  options.path = "/usr/share/datasets/fashion-mnist";
  options.max_images = 3;
  const std::shared_ptr<Dataset> plain = open_source(options);
  options.transform.resolution = 64;
  options.transform.channels = 3;
  const std::shared_ptr<Dataset> rendered = open_source(options);
  EXPECT_EQ(rendered->shape().channels, 3);
  EXPECT_EQ(rendered->shape().height, 64);
  EXPECT_EQ(rendered->shape().width, 64);
  EXPECT_EQ(rendered->label_dim(), plain->label_dim());
  const std::vector<uint8_t> small = image_of(*plain, 1), big = image_of(*rendered, 1);
  // Gray made RGB: three equal planes; a 2x upscale twice over keeps the mean within rounding.
  EXPECT_TRUE(std::equal(big.begin(), big.begin() + 4096, big.begin() + 4096));
  const double small_mean = std::accumulate(small.begin(), small.end(), 0.0) / static_cast<double>(small.size());
  const double big_mean = std::accumulate(big.begin(), big.end(), 0.0) / static_cast<double>(big.size());
  EXPECT_NEAR(big_mean, small_mean, 2.0);
}

TEST(PrefetchLoader, SameBatchesAsTheSynchronousLoaderAndRestartsOnJumps) {
  auto dataset = std::make_shared<RandomImages>(50, 1, 4);
  auto loader = std::make_shared<BatchLoader>(dataset, LoaderOptions{8, 0, 1, 9, true});
  for (int workers : {0, 1, 3}) {
    PrefetchLoader prefetch(loader, PrefetchOptions{workers, 2});
    for (int64_t k : {0, 1, 2, 3, 10, 11, 4}) {
      EXPECT_TRUE(prefetch.get(k).images.equal(loader->load(k).images)) << "batch " << k << ", workers " << workers;
    }
  }
}

// A dataset that records the images read.
class RecordedImages : public RandomImages {
 public:
  RecordedImages() : RandomImages(80, 1, 4) {}
  void read_image(int64_t index, uint8_t* out) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      read_.insert(index);
    }
    RandomImages::read_image(index, out);
  }
  std::set<int64_t> read() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return read_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::set<int64_t> read_;
};

TEST(PrefetchLoader, PrimeDecodesTheBatchesAheadBeforeTheFirstGet) {
  const LoaderOptions options{8, 0, 1, 9, true};
  auto expected = std::make_shared<RecordedImages>();
  for (int64_t k : {5, 6, 7}) BatchLoader(expected, options).load(k);
  auto dataset = std::make_shared<RecordedImages>();
  auto loader = std::make_shared<BatchLoader>(dataset, options);
  PrefetchLoader prefetch(loader, PrefetchOptions{2, 3});
  prefetch.prime(5);  // no get() yet: the workers start at 5 and return once 5, 6 and 7 are ready
  const std::set<int64_t> read = dataset->read();
  for (int64_t index : expected->read()) EXPECT_EQ(read.count(index), 1u) << "image " << index;
  EXPECT_TRUE(prefetch.get(5).images.equal(loader->load(5).images));
  EXPECT_TRUE(prefetch.get(6).images.equal(loader->load(6).images));
}

// A dataset that fails on one record, to check that worker errors reach the trainer.
class FailingImages : public RandomImages {
 public:
  FailingImages() : RandomImages(40, 1, 4) {}
  void read_image(int64_t index, uint8_t* out) const override {
    SG2_CHECK(index != 13, "record {} is corrupt", index);
    RandomImages::read_image(index, out);
  }
};

TEST(PrefetchLoader, WorkerErrorsAreRethrown) {
  auto loader = std::make_shared<BatchLoader>(std::make_shared<FailingImages>(), LoaderOptions{40, 0, 1, 0, false});
  PrefetchLoader prefetch(loader, PrefetchOptions{2, 2});
  EXPECT_NE(test::error_message([&] { prefetch.get(0); }).find("record 13 is corrupt"), std::string::npos);
}

}  // namespace
}  // namespace sg2::data

namespace sg2::data {
namespace {

// JPEG fixtures made with PIL (quality 95): a 24x16 image, left half (200, 40, 40), right half
// (40, 40, 200); and a flat gray 8x8 one of 128. JPEG is lossy, so values are compared within 6.
TEST(Jpeg, DecodesRgbAndGrayAndResizesThem) {
  const std::string dir = test::source_dir() + "/tests/unit/data/fixtures/";
  const std::vector<uint8_t> bytes = read_file_bytes(dir + "two_halves_24x16.jpg");
  const Image rgb = decode_image(bytes.data(), bytes.size(), "two_halves");
  ASSERT_EQ(rgb.width, 24);
  ASSERT_EQ(rgb.height, 16);
  ASSERT_EQ(rgb.channels, 3);
  auto pixel = [&](const Image& image, int64_t x, int64_t y, int64_t c) {
    return int(image.pixels[size_t((y * image.width + x) * image.channels + c)]);
  };
  EXPECT_NEAR(pixel(rgb, 2, 8, 0), 200, 6);
  EXPECT_NEAR(pixel(rgb, 21, 8, 2), 200, 6);
  EXPECT_NEAR(pixel(rgb, 21, 8, 0), 40, 6);
  // Center crop to 16x16 (columns 4-19), then lanczos to 8x8: the halves stay apart.
  ImageTransform transform;
  transform.resolution = 8;
  const Image small = apply_transform(rgb, transform);
  EXPECT_EQ(small.width, 8);
  EXPECT_NEAR(pixel(small, 0, 4, 0), 200, 6);
  EXPECT_NEAR(pixel(small, 7, 4, 2), 200, 6);
  const std::vector<uint8_t> gray_bytes = read_file_bytes(dir + "gray_8x8.jpg");
  const Image gray = decode_image(gray_bytes.data(), gray_bytes.size(), "gray");
  EXPECT_EQ(gray.channels, 1);
  EXPECT_NEAR(pixel(gray, 3, 3, 0), 128, 2);
  const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + 100);
  EXPECT_NE(test::error_message([&] { decode_image(cut.data(), cut.size(), "cut.jpg"); }).find("cut.jpg"), std::string::npos);
  const std::vector<uint8_t> cmyk = read_file_bytes(dir + "cmyk_8x8.jpg");  // PIL's Image.new("CMYK", ...)
  EXPECT_NE(test::error_message([&] { decode_image(cmyk.data(), cmyk.size(), "cmyk.jpg"); })
                .find("JPEG 'cmyk.jpg' is CMYK: convert it to RGB"),
            std::string::npos);
}

}  // namespace
}  // namespace sg2::data
