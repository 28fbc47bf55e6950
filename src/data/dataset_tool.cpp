#include "sg2/data/dataset_tool.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/progress.h"
#include "sg2/core/system.h"
#include "sg2/core/timer.h"
#include "sg2/data/dataset_writer.h"
#include "sg2/data/example.h"
#include "sg2/data/fashion_mnist.h"
#include "sg2/data/image_archive_dataset.h"
#include "sg2/data/prefetch_loader.h"
#include "sg2/data/tfrecord_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace sg2::data {

namespace fs = std::filesystem;

namespace {

bool is_zip_path(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  return extension == ".zip";
}

// Reads and checks every record of one TFRecord file; returns the record count.
int64_t verify_level(const std::string& path, int level) {
  TFRecordFile file(path);
  const std::vector<RecordSpan> spans = file.scan();
  std::vector<uint8_t> payload;
  for (size_t i = 0; i < spans.size(); ++i) {
    file.read(int64_t(i), spans[i], payload);
    const std::string where = fmt::format("'{}': record {} at byte offset {}", path, i, spans[i].offset);
    const ImageRecord image = decode_image_example(payload.data(), payload.size(), where);
    SG2_CHECK(image.height == (int64_t(1) << level) && image.width == image.height,
              "{}: a level-{} record should be {}x{}, it is {}x{}", where, level, 1 << level, 1 << level, image.width,
              image.height);
  }
  return int64_t(spans.size());
}

bool verify_tfrecord_levels(const TFRecordLayout& layout) {
  bool ok = true;
  int64_t expected = -1;
  for (const auto& [level, path] : layout.levels) {
    try {
      const int64_t count = verify_level(path, level);
      fmt::print("  r{:02d} {:>5}x{:<5} {} records, all CRCs and Examples valid\n", level, 1 << level, 1 << level, count);
      if (expected >= 0 && count != expected) {
        fmt::print("  ERROR: '{}' has {} records, the other levels {}\n", path, count, expected);
        ok = false;
      }
      expected = count;
    } catch (const Error& e) {
      fmt::print("  ERROR: {}\n", e.what());
      ok = false;
    }
  }
  for (int level : layout.missing_levels()) {
    fmt::print("  ERROR: level r{:02d} is missing ({}-r{:02d}.tfrecords)\n", level, layout.name, level);
    ok = false;
  }
  return ok;
}

// Decodes every image of a dataset that is not a TFRecord directory (ZIP, image folder, IDX files),
// printing the first errors. Returns true if all decode to the dataset's shape.
bool verify_every_image(const Dataset& dataset) {
  constexpr int kErrorsShown = 10;
  std::vector<uint8_t> chw(size_t(dataset.shape().bytes()));
  std::vector<float> label(size_t(std::max<int64_t>(dataset.label_dim(), 1)));
  int64_t bad = 0;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    try {
      dataset.read_image(i, chw.data());
      dataset.read_label(i, label.data());
    } catch (const Error& e) {
      if (++bad <= kErrorsShown) fmt::print("  ERROR: image {}: {}\n", i, e.what());
    }
  }
  if (bad == 0) fmt::print("  all {} images decode to the dataset's shape\n", dataset.size());
  else fmt::print("  ERROR: {} of {} images are unreadable{}\n", bad, dataset.size(), bad > kErrorsShown ? " (first 10 shown)" : "");
  return bad == 0;
}

// The destination must not be the source, nor an existing file unless overwrite, nor a non-empty directory.
void check_destination(const CreateOptions& options) {
  std::error_code error;
  SG2_CHECK(!fs::equivalent(options.dest, options.source.path, error),
            "destination '{}' is the source itself; write to a new path", options.dest);
  if (is_zip_path(options.dest)) {
    SG2_CHECK(!fs::is_directory(options.dest), "destination '{}' is a directory; a ZIP destination is a file path",
              options.dest);
    SG2_CHECK(options.overwrite || !fs::exists(options.dest),
              "destination '{}' exists; pass --overwrite to replace it, or choose a new path", options.dest);
  } else {
    SG2_CHECK(!fs::exists(options.dest) || (fs::is_directory(options.dest) && fs::is_empty(options.dest)),
              "destination '{}' exists and is not an empty directory; choose a new directory", options.dest);
  }
}

// Whether `inner` is `outer` or lies inside it (both as they would resolve, existing or not).
bool path_within(const fs::path& inner, const fs::path& outer) {
  const fs::path in = fs::weakly_canonical(inner), out = fs::weakly_canonical(outer);
  const auto mismatch = std::mismatch(out.begin(), out.end(), in.begin(), in.end());
  return mismatch.first == out.end();
}

// PNGs never go into the source (a folder source would grow by its own export), nor over files
// already there unless overwrite.
void check_export_destination(const std::string& source, const std::string& outdir, bool overwrite) {
  SG2_CHECK(!path_within(outdir, source), "--outdir '{}' is inside the source '{}': the export would add to the "
            "dataset it reads; choose a directory elsewhere", outdir, source);
  SG2_CHECK(!fs::exists(outdir) || fs::is_directory(outdir), "--outdir '{}' exists and is not a directory", outdir);
  SG2_CHECK(overwrite || !fs::exists(outdir) || fs::is_empty(outdir),
            "--outdir '{}' is not empty; pass --overwrite to write over the files there, or choose a new directory",
            outdir);
}

// A dataset whose images (Fashion-MNIST's, a TFRecord level's) go through `stylegan2_dataset
// create`'s --resolution / --channels, as the image files' do when they are decoded.
class TransformedDataset : public Dataset {
 public:
  TransformedDataset(std::shared_ptr<Dataset> source, const ImageTransform& transform)
      : source_(std::move(source)), transform_(transform) {
    const ImageShape s = source_->shape();
    SG2_CHECK(transform_.resolution > 0 || s.height == s.width, "'{}' has {}x{} images: --resolution R makes them "
              "square", source_->name(), s.width, s.height);
    shape_ = {transform_.channels > 0 ? transform_.channels : s.channels,
              transform_.resolution > 0 ? transform_.resolution : s.height,
              transform_.resolution > 0 ? transform_.resolution : s.width};
  }
  std::string name() const override { return source_->name(); }
  std::string subset() const override { return source_->subset(); }
  int64_t size() const override { return source_->size(); }
  ImageShape shape() const override { return shape_; }
  int64_t label_dim() const override { return source_->label_dim(); }
  void read_image(int64_t index, uint8_t* out) const override {
    const ImageShape s = source_->shape();
    std::vector<uint8_t> chw(static_cast<size_t>(s.bytes()));
    source_->read_image(index, chw.data());
    image_to_chw(apply_transform(image_from_chw(chw.data(), s.channels, s.height, s.width), transform_), out);
  }
  void read_label(int64_t index, float* out) const override { source_->read_label(index, out); }

 private:
  std::shared_ptr<Dataset> source_;
  ImageTransform transform_;
  ImageShape shape_;
};

}  // namespace

std::shared_ptr<Dataset> open_source(const SourceOptions& options) {
  const std::string& path = options.path;
  SG2_CHECK(fs::exists(path), "source '{}' does not exist", path);
  std::shared_ptr<Dataset> dataset;
  if (TFRecordDataset::looks_like(path)) {
    auto tfrecords = std::make_shared<TFRecordDataset>(path, false, options.max_images, options.level);
    const bool labelled = tfrecords->available_label_dim() > 0;
    dataset = labelled ? std::make_shared<TFRecordDataset>(path, true, options.max_images, options.level) : tfrecords;
  } else if (FashionMnistDataset::looks_like(path)) {
    dataset = std::make_shared<FashionMnistDataset>(path, options.split, true, options.max_images);
  }
  // The image files apply the transform as they decode; the other sources' pixels go through it here.
  if (dataset != nullptr && options.transform.active() && !ImageFiles::looks_like(path)) {
    dataset = std::make_shared<TransformedDataset>(dataset, options.transform);
  } else if (ImageFiles::looks_like(path)) {
    auto images = std::make_shared<ImageArchiveDataset>(path, false, options.max_images, options.transform);
    SG2_CHECK(images->label_error().empty() || options.ignore_labels,
              "{}; fix or remove it{}", images->label_error(), options.ignore_labels_hint);
    const bool labelled = images->available_label_dim() > 0 && !options.ignore_labels;
    dataset = labelled ? std::make_shared<ImageArchiveDataset>(path, true, options.max_images, options.transform) : images;
  }
  SG2_CHECK(dataset != nullptr,
            "'{}': not a dataset (expected a TFRecord directory, a ZIP or folder of PNG/JPEG images, or the "
            "Fashion-MNIST IDX files)",
            path);
  SG2_CHECK(options.split == "train" || FashionMnistDataset::looks_like(path),
            "--split {}: only the Fashion-MNIST IDX files have splits; '{}' is read whole", options.split, path);
  SG2_CHECK(options.level == 0 || TFRecordDataset::looks_like(path),
            "--level {}: only TFRecord directories have levels; '{}' has its images at one resolution", options.level,
            path);
  return dataset;
}

void create_dataset(const CreateOptions& options) {
  check_destination(options);
  SourceOptions source_options = options.source;
  source_options.ignore_labels = !options.labels;
  source_options.ignore_labels_hint = ", or pass --no-labels to make a dataset without labels";
  const std::shared_ptr<Dataset> source = open_source(source_options);
  const ImageShape s = source->shape();
  const int64_t labels = source->label_dim();
  fmt::print("Source: {} ({}, {}x{}, {}, {})\n", options.source.path, counted(source->size(), "image"), s.width,
             s.height, counted(s.channels, "channel"),
             labels > 0 ? "labels of " + counted(labels, "value") : std::string("no labels"));
  WriteOptions write;
  write.shuffle = options.shuffle;
  write.labels = options.labels;
  write.workers = options.workers;
  ProgressMeter meter("writing " + options.dest, source->size(), "img");
  write.progress = [&meter](int64_t done, int64_t) { meter.update(done); };
  if (is_zip_path(options.dest)) {
    write_zip_dataset(*source, options.dest, write);
  } else {
    write_tfrecord_dataset(*source, options.dest, write);
  }
  meter.finish();
  fmt::print("Wrote {}\n", options.dest);
}

bool print_dataset_info(const std::string& path, bool verify) {
  SourceOptions source;
  source.path = path;
  const std::shared_ptr<Dataset> dataset = open_source(source);
  const ImageShape s = dataset->shape();
  fmt::print("{}: {} images, {}x{}, {} channel{}, {}\n", path, dataset->size(), s.width, s.height, s.channels,
             s.channels == 1 ? "" : "s",
             dataset->label_dim() > 0 ? fmt::format("labels of {} values", dataset->label_dim()) : "no labels");
  if (!TFRecordDataset::looks_like(path)) return !verify || verify_every_image(*dataset);
  const TFRecordLayout layout = find_tfrecord_layout(path);
  fmt::print("TFRecord levels of '{}'{}:\n", layout.name, layout.labels.empty() ? "" : " (labels: " + layout.labels + ")");
  if (!verify) {
    for (const auto& [level, file] : layout.levels) fmt::print("  r{:02d} {}\n", level, file);
    return layout.missing_levels().empty();
  }
  return verify_tfrecord_levels(layout);
}

void export_pngs(const SourceOptions& options, const std::string& outdir, bool overwrite) {
  check_export_destination(options.path, outdir, overwrite);
  SourceOptions images_only = options;
  images_only.ignore_labels = true;  // PNGs carry no labels
  const std::shared_ptr<Dataset> dataset = open_source(images_only);
  const ImageShape s = dataset->shape();
  create_output_directory(outdir, "--outdir");
  std::vector<uint8_t> chw(size_t(s.bytes()));
  for (int64_t i = 0; i < dataset->size(); ++i) {
    dataset->read_image(i, chw.data());
    write_png((fs::path(outdir) / fmt::format("img{:08d}.png", i)).string(),
              image_from_chw(chw.data(), s.channels, s.height, s.width));
  }
  fmt::print("Exported {} images to {}\n", dataset->size(), outdir);
}

void bench_loader(const LoaderBenchOptions& options) {
  DatasetOptions open;
  open.path = options.path;
  const std::shared_ptr<Dataset> dataset = open_dataset(open);
  const ImageShape s = dataset->shape();
  auto loader = std::make_shared<BatchLoader>(dataset, LoaderOptions{options.batch, 0, 1, 0, options.mirror});
  PrefetchLoader prefetch(loader, PrefetchOptions{options.workers, options.prefetch});
  prefetch.get(0);  // start-up (threads, index) is not timed
  const Stopwatch watch;
  for (int64_t k = 1; k <= options.batches; ++k) prefetch.get(k);
  const double seconds = watch.seconds();
  const double images = double(options.batches * options.batch);
  fmt::print("{}: {}x{}x{}, batch {}, {} workers, {} batches in {:.3f} s: {:.0f} img/s, {:.1f} MB/s of pixels "
             "(read + verify + decode + batch{})\n",
             options.path, s.channels, s.height, s.width, options.batch, options.workers, options.batches, seconds,
             images / seconds, images * double(s.bytes()) / seconds / 1e6, options.mirror ? " + mirror" : "");
}

}  // namespace sg2::data
