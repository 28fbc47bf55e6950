// Sharded batches, mirroring, synthetic data, PNG files and image grids.
#include "sg2/core/error.h"
#include "sg2/core/rng.h"
#include "sg2/data/fashion_mnist.h"
#include "sg2/data/image_io.h"
#include "sg2/data/loader.h"
#include "sg2/data/synthetic.h"
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

namespace sg2::data {
namespace {

TEST(ShardedSampler, EveryRecordOncePerEpochDisjointRanksSameOrderForAnyWorld) {
  const int64_t dataset = 300, batch = 60;  // 5 global batches per epoch; 60 = 1 * 2 * 3 * 4 * 5 / 2
  std::vector<int64_t> reference;           // world size 1
  for (int world : {1, 2, 3, 4, 5, 6}) {
    std::vector<int64_t> sequence;
    for (int64_t k = 0; k < 5; ++k) {
      std::set<int64_t> seen_in_batch;
      for (int rank = 0; rank < world; ++rank) {
        ShardedSampler sampler(dataset, batch, rank, world, 99);
        for (const auto& item : sampler.rank_items(k)) {
          EXPECT_TRUE(seen_in_batch.insert(item.record).second) << "ranks overlap, world " << world;
          sequence.push_back(item.record);
        }
      }
    }
    std::set<int64_t> epoch(sequence.begin(), sequence.end());
    EXPECT_EQ(epoch.size(), static_cast<size_t>(dataset)) << "world " << world;
    if (reference.empty()) reference = sequence;
    EXPECT_EQ(sequence, reference) << "world " << world;
  }
  // The next epoch is another permutation.
  ShardedSampler sampler(dataset, batch, 0, 1, 99);
  EXPECT_NE(sampler.rank_items(5)[0].record * 1000 + sampler.rank_items(5)[1].record,
            sampler.rank_items(0)[0].record * 1000 + sampler.rank_items(0)[1].record);
}

TEST(ShardedSampler, RejectsIndivisibleBatch) { EXPECT_THROW(ShardedSampler(10, 10, 0, 3, 0), Error); }

// The definition: three plane waves per channel, sin(2 pi (fx x + fy y) + phase), drawn per image
// from its index. The dataset builds each wave from per-axis tables; the bytes may differ by one
// where the two roundings fall on either side of an integer.
TEST(SyntheticDataset, ImagesAreTheirPlaneWaves) {
  const int64_t resolution = 24, channels = 3;
  const SyntheticDataset dataset(100, resolution, channels, 0);
  std::vector<uint8_t> image(static_cast<size_t>(channels * resolution * resolution));
  for (const int64_t index : {0, 7, 99}) {
    dataset.read_image(index, image.data());
    SplitMix64 random(mix_seed({0x53594e54ULL, static_cast<uint64_t>(index)}));
    int64_t off_by_one = 0;
    for (int64_t c = 0; c < channels; ++c) {
      double fx[3], fy[3], phase[3];
      for (int k = 0; k < 3; ++k) {
        fx[k] = (random.uniform() - 0.5) * 12.0 / resolution;
        fy[k] = (random.uniform() - 0.5) * 12.0 / resolution;
        phase[k] = random.uniform() * 2 * M_PI;
      }
      for (int64_t y = 0; y < resolution; ++y) {
        for (int64_t x = 0; x < resolution; ++x) {
          double v = 0;
          for (int k = 0; k < 3; ++k) v += std::sin(2 * M_PI * (fx[k] * x + fy[k] * y) + phase[k]);
          const int expected = static_cast<int>(std::clamp(127.5 + 42.0 * v, 0.0, 255.0));
          const int got = image[static_cast<size_t>((c * resolution + y) * resolution + x)];
          ASSERT_LE(std::abs(got - expected), 1) << "image " << index << " channel " << c << " at " << x << "," << y;
          off_by_one += got != expected;
        }
      }
    }
    EXPECT_LT(off_by_one, channels * resolution * resolution / 100) << "image " << index;
  }
}

TEST(BatchLoader, MirrorFlipsExactlyTheFlaggedImages) {
  auto dataset = std::make_shared<SyntheticDataset>(64, 8, 3, 0);
  LoaderOptions options;
  options.global_batch = 16;
  options.mirror = true;
  BatchLoader loader(dataset, options);
  const auto items = loader.sampler().rank_items(0);
  const Batch batch = loader.load(0);
  ASSERT_EQ(batch.images.sizes(), at::IntArrayRef({16, 3, 8, 8}));
  int flipped = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<uint8_t> original(3 * 8 * 8);
    dataset->read_image(items[i].record, original.data());
    at::Tensor expected = at::from_blob(original.data(), {3, 8, 8}, at::kByte).clone();
    if (items[i].flip) expected = expected.flip({2});
    flipped += items[i].flip;
    EXPECT_TRUE(batch.images[static_cast<int64_t>(i)].equal(expected)) << "image " << i;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 16);
}

TEST(BatchLoader, LabelsLineUpWithImages) {
  auto dataset = std::make_shared<FashionMnistDataset>(kFashionMnistDir, "train", true, 500);
  LoaderOptions options;
  options.global_batch = 8;
  BatchLoader loader(dataset, options);
  const auto items = loader.sampler().rank_items(3);
  const Batch batch = loader.load(3);
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(batch.labels[static_cast<int64_t>(i)].argmax().item<int64_t>(), dataset->class_of(items[i].record));
  }
  const at::Tensor table = all_labels(*dataset);
  EXPECT_EQ(table.sizes(), at::IntArrayRef({500, 10}));
  EXPECT_EQ(table.sum().item<float>(), 500.0f);
}

TEST(Png, RoundTripsGrayAndRgb) {
  test::TempDir dir;
  for (int64_t channels : {1, 3, 4}) {
    Image image;
    image.width = 5;
    image.height = 3;
    image.channels = channels;
    for (int64_t i = 0; i < 5 * 3 * channels; ++i) image.pixels.push_back(static_cast<uint8_t>(i * 7));
    const std::string path = dir.file("img" + std::to_string(channels) + ".png");
    write_png(path, image);
    const Image back = read_png(path);
    EXPECT_EQ(back.width, 5);
    EXPECT_EQ(back.height, 3);
    EXPECT_EQ(back.channels, channels);
    EXPECT_EQ(back.pixels, image.pixels);
  }
}

TEST(Png, ErrorsNameTheFile) {
  test::TempDir dir;
  std::ofstream(dir.file("fake.png")) << "not a png";
  try {
    read_png(dir.file("fake.png"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fake.png"), std::string::npos);
  }
  EXPECT_THROW(write_png(dir.file("missing/x.png"), Image{1, 1, 1, {0}}), Error);
}

TEST(ImageGrid, TilesRowByRowAndConvertsRanges) {
  at::Tensor images = at::arange(6, at::kFloat).reshape({6, 1, 1, 1}) / 5.0 * 2.0 - 1.0;  // -1 .. 1
  const at::Tensor bytes = to_uint8(images, -1, 1);
  EXPECT_EQ(bytes.flatten()[0].item<int>(), 0);
  EXPECT_EQ(bytes.flatten()[5].item<int>(), 255);
  const Image grid = tile_grid(bytes, 3, 2);
  EXPECT_EQ(grid.width, 3);
  EXPECT_EQ(grid.height, 2);
  EXPECT_EQ(grid.pixels[3], bytes.flatten()[3].item<uint8_t>());  // second row starts with image 3
  EXPECT_EQ(default_grid_size(32, 32), (std::pair<int64_t, int64_t>(32, 32)));
  EXPECT_EQ(default_grid_size(1024, 1024), (std::pair<int64_t, int64_t>(7, 4)));
}

}  // namespace
}  // namespace sg2::data
