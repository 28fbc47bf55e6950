#pragma once
// The commands of `stylegan2_dataset` (apps/stylegan2_dataset.cpp parses the command line).

#include "sg2/data/dataset.h"
#include "sg2/data/image_transform.h"

#include <string>

namespace sg2::data {

struct SourceOptions {
  std::string path;
  std::string split = "train";  // Fashion-MNIST source: train (as the original), test or all
  int64_t max_images = 0;
  int64_t level = 0;          // TFRecord source: resolution of the level to read (0: full)
  ImageTransform transform;   // every source: resize / convert the images it reads
  bool ignore_labels = false; // image folder / ZIP: read no labels, even damaged ones
  std::string ignore_labels_hint;  // how to ask for ignore_labels, for the error of damaged ones
};

// Any readable dataset with its labels exposed when it has some.
std::shared_ptr<Dataset> open_source(const SourceOptions& options);

struct CreateOptions {
  SourceOptions source;
  std::string dest;   // a directory (TFRecords) or a path ending in .zip (stylegan2-ada ZIP)
  bool shuffle = true;
  bool labels = true;
  int workers = 2;
  bool overwrite = false;  // replace an existing ZIP destination (never the source)
};
void create_dataset(const CreateOptions& options);

// Prints count, shape, labels and levels; with verify, reads and checks every record of every level
// (CRCs, Example structure, shapes, record counts) or decodes every image of a ZIP, folder or IDX
// files. Returns false if anything is wrong.
bool print_dataset_info(const std::string& path, bool verify);

// PNGs img00000000.png... into outdir, which must not be inside the source, and must be new or empty
// unless overwrite.
void export_pngs(const SourceOptions& source, const std::string& outdir, bool overwrite = false);

struct LoaderBenchOptions {
  std::string path;
  int workers = 2;
  int prefetch = 8;
  int64_t batch = 32;
  int64_t batches = 200;
  bool mirror = true;
};
// Times read + verify + decode + batch through the training loader; prints img/s and MB/s.
void bench_loader(const LoaderBenchOptions& options);

}  // namespace sg2::data
