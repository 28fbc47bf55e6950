#include "sg2/data/dataset_writer.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/rng.h"
#include "sg2/data/example.h"
#include "sg2/data/image_io.h"
#include "sg2/data/npy.h"
#include "sg2/data/tfrecord.h"
#include "sg2/data/zip_archive.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <exception>
#include <filesystem>
#include <thread>

namespace sg2::data {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kChunkPerWorker = 64;
constexpr uint32_t kShuffleSeed = 123;

// Runs fn(i) for i in [begin, end) on `workers` threads; rethrows the first failure.
void parallel_range(int64_t begin, int64_t end, int workers, const std::function<void(int64_t)>& fn) {
  std::vector<std::exception_ptr> failures(static_cast<size_t>(std::max(workers, 1)));
  std::vector<std::thread> threads;
  for (int w = 0; w < std::max(workers, 1); ++w) {
    threads.emplace_back([&, w] {
      try {
        for (int64_t i = begin + w; i < end; i += std::max(workers, 1)) fn(i);
      } catch (...) {
        failures[size_t(w)] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

// Processes the source in chunks: encode(position) runs in parallel, write(position) in order.
template <typename Encoded>
void encode_in_order(int64_t count, const WriteOptions& options, const std::function<Encoded(int64_t)>& encode,
                     const std::function<void(int64_t, Encoded&)>& write) {
  const int64_t chunk = kChunkPerWorker * std::max(options.workers, 1);
  for (int64_t start = 0; start < count; start += chunk) {
    const int64_t stop = std::min(count, start + chunk);
    std::vector<Encoded> encoded(static_cast<size_t>(stop - start));
    parallel_range(start, stop, options.workers, [&](int64_t i) { encoded[size_t(i - start)] = encode(i); });
    for (int64_t i = start; i < stop; ++i) write(i, encoded[size_t(i - start)]);
    if (options.progress) options.progress(stop, count);
  }
}

int exact_log2(int64_t value) {
  int level = 0;
  while ((int64_t(1) << level) < value) ++level;
  return (int64_t(1) << level) == value ? level : -1;
}

std::vector<float> labels_of(const Dataset& source, const std::vector<int64_t>& order) {
  const int64_t dim = source.label_dim();
  std::vector<float> labels(order.size() * size_t(dim));
  for (size_t i = 0; i < order.size(); ++i) source.read_label(order[i], labels.data() + i * size_t(dim));
  return labels;
}

}  // namespace

std::vector<int64_t> stylegan2_shuffled_order(int64_t count) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[size_t(i)] = i;
  NumpyRandomState(kShuffleSeed).shuffle(order);
  return order;
}

std::vector<float> box_downsample(const std::vector<float>& image, int64_t channels, int64_t side) {
  const int64_t half = side / 2;
  std::vector<float> out(static_cast<size_t>(channels * half * half));
  for (int64_t c = 0; c < channels; ++c) {
    const float* in = image.data() + c * side * side;
    for (int64_t y = 0; y < half; ++y) {
      for (int64_t x = 0; x < half; ++x) {
        const float* p = in + 2 * y * side + 2 * x;
        out[size_t((c * half + y) * half + x)] = (((p[0] + p[1]) + p[side]) + p[side + 1]) * 0.25f;
      }
    }
  }
  return out;
}

std::vector<uint8_t> quantize(const std::vector<float>& image) {
  std::vector<uint8_t> out(image.size());
  for (size_t i = 0; i < image.size(); ++i) out[i] = uint8_t(std::clamp(std::nearbyint(image[i]), 0.0f, 255.0f));
  return out;
}

void write_tfrecord_dataset(const Dataset& source, const std::string& directory, const WriteOptions& options) {
  const ImageShape shape = source.shape();
  const int top = exact_log2(shape.height);
  SG2_CHECK(shape.height == shape.width && top >= 2,
            "TFRecord datasets need square power-of-two images of at least 4x4; the source is {}x{} "
            "(use --resolution to resize)",
            shape.width, shape.height);
  create_output_directory(directory, "the destination");
  const std::string name = fs::path(directory).lexically_normal().filename().string();
  SG2_CHECK(!name.empty() && name != "." && name != "..", "cannot derive a dataset name from '{}'", directory);
  std::vector<std::unique_ptr<TFRecordWriter>> writers;  // [0] = full resolution
  for (int level = top; level >= 2; --level) {
    writers.push_back(std::make_unique<TFRecordWriter>(
        (fs::path(directory) / fmt::format("{}-r{:02d}.tfrecords", name, level)).string()));
  }
  std::vector<int64_t> order = options.shuffle ? stylegan2_shuffled_order(source.size()) : std::vector<int64_t>();
  if (!options.shuffle) {
    for (int64_t i = 0; i < source.size(); ++i) order.push_back(i);
  }
  using Payloads = std::vector<std::string>;
  encode_in_order<Payloads>(
      source.size(), options,
      [&](int64_t position) {
        std::vector<uint8_t> pixels(size_t(shape.bytes()));
        source.read_image(order[size_t(position)], pixels.data());
        Payloads payloads{encode_image_example(pixels.data(), shape.channels, shape.height, shape.width)};
        std::vector<float> level(pixels.begin(), pixels.end());
        for (int64_t side = shape.height; side > 4; side /= 2) {
          level = box_downsample(level, shape.channels, side);
          const std::vector<uint8_t> q = quantize(level);
          payloads.push_back(encode_image_example(q.data(), shape.channels, side / 2, side / 2));
        }
        return payloads;
      },
      [&](int64_t, Payloads& payloads) {
        for (size_t k = 0; k < writers.size(); ++k) writers[k]->write(payloads[k].data(), payloads[k].size());
      });
  if (options.labels && source.label_dim() > 0) {
    FloatMatrix labels{source.size(), source.label_dim(), labels_of(source, order)};
    write_npy_float32((fs::path(directory) / (name + "-rxx.labels")).string(), labels);
  }
  for (auto& writer : writers) writer->close();
}

void write_zip_dataset(const Dataset& source, const std::string& zip_path, const WriteOptions& options) {
  const ImageShape shape = source.shape();
  SG2_CHECK(shape.channels == 1 || shape.channels == 3, "ZIP datasets hold gray or RGB PNGs; the source has {} channels",
            shape.channels);
  if (fs::path(zip_path).has_parent_path()) create_output_directory(fs::path(zip_path).parent_path().string(), "the destination's directory");
  ZipWriter zip(zip_path);
  nlohmann::json labels = nlohmann::json::array();
  const int64_t dim = options.labels ? source.label_dim() : 0;
  encode_in_order<std::vector<uint8_t>>(
      source.size(), options,
      [&](int64_t index) {
        std::vector<uint8_t> chw(size_t(shape.bytes()));
        source.read_image(index, chw.data());
        return encode_png(image_from_chw(chw.data(), shape.channels, shape.height, shape.width), 1);
      },
      [&](int64_t index, std::vector<uint8_t>& png) {
        const std::string name = fmt::format("{:05d}/img{:08d}.png", index / 1000, index);
        zip.add(name, png.data(), png.size());
        if (dim == 0) return;
        std::vector<float> label(static_cast<size_t>(dim));
        source.read_label(index, label.data());
        const auto ones = std::count(label.begin(), label.end(), 1.0f);
        const auto zeros = std::count(label.begin(), label.end(), 0.0f);
        if (ones == 1 && ones + zeros == dim) {
          labels.push_back({name, std::find(label.begin(), label.end(), 1.0f) - label.begin()});
        } else {
          labels.push_back({name, label});
        }
      });
  const std::string json = nlohmann::json{{"labels", dim > 0 ? labels : nlohmann::json(nullptr)}}.dump();
  zip.add("dataset.json", json.data(), json.size());
  zip.close();
}

}  // namespace sg2::data
