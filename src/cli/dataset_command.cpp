#include "sg2/cli/dataset_command.h"

namespace sg2::cli {

namespace {

// 0 (keep) or a power of two from 4 to 16384: what a StyleGAN2 network can be trained at.
const CLI::Validator kResolution(
    [](const std::string& text) -> std::string {
      int64_t r = -1;
      if (!CLI::detail::lexical_cast(text, r)) r = -1;  // not a number: refused below
      if (r == 0 || (r >= 4 && r <= 16384 && (r & (r - 1)) == 0)) return "";
      return "must be 0 (keep the size) or a power of two from 4 to 16384, not " + text;
    },
    "0|POWER_OF_TWO");

void add_source_options(CLI::App& command, data::SourceOptions& source) {
  command.add_option("--max-images", source.max_images, "Use only the first N images (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  command.add_option("--split", source.split, "Fashion-MNIST source: train, test or all")->capture_default_str();
}

}  // namespace

void DatasetCommand::add_to(CLI::App& app) {
  app.require_subcommand(1);
  create_cmd_ = app.add_subcommand("create", "Make a dataset from images, Fashion-MNIST IDX files or a ZIP");
  create_cmd_->add_option("--source", create_.source.path, "Folder of PNG/JPEG images, stylegan2-ada ZIP, TFRecord "
                         "directory or Fashion-MNIST IDX directory")->required();
  create_cmd_->add_option("--dest", create_.dest, "Output: a directory (TFRecords, all levels) or a .zip path")->required();
  create_cmd_->add_option("--resolution", create_.source.transform.resolution,
                         "Center-crop and resize images to RxR (0: keep; images must then be square powers of two)")
      ->check(kResolution);
  create_cmd_->add_option("--channels", create_.source.transform.channels, "Convert to 1 (gray) or 3 (RGB) channels")
      ->check(CLI::IsMember({0, 1, 3}));
  create_cmd_->add_option("--filter", filter_, "Resize filter: box or lanczos")->capture_default_str();
  create_cmd_->add_flag("!--no-shuffle", create_.shuffle, "Keep the source order (default: the original's seeded shuffle)");
  create_cmd_->add_flag("!--no-labels", create_.labels, "Do not write the source's labels");
  create_cmd_->add_option("--workers", create_.workers, "Threads decoding and encoding")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  create_cmd_->add_flag("--overwrite", create_.overwrite, "Replace an existing ZIP destination");
  add_source_options(*create_cmd_, create_.source);

  convert_cmd_ = app.add_subcommand("convert", "Convert between a TFRecord directory and a ZIP, order kept");
  convert_cmd_->add_option("source", convert_source_, "TFRecord directory or ZIP/folder")->required();
  convert_cmd_->add_option("dest", convert_dest_, "Directory (TFRecords) or .zip path")->required();
  convert_cmd_->add_flag("--overwrite", convert_overwrite_, "Replace an existing ZIP destination");

  info_cmd_ = app.add_subcommand("info", "Print count, shape, labels and levels; check every record");
  info_cmd_->add_option("path", info_path_, "Dataset")->required();
  info_cmd_->add_flag("--no-verify", skip_verify_, "Skip reading every record of every level");

  export_cmd_ = app.add_subcommand("export", "Write the images of a dataset as PNG files");
  export_cmd_->add_option("path", export_source_.path, "Dataset")->required();
  export_cmd_->add_option("--outdir", outdir_, "Output directory")->required();
  export_cmd_->add_option("--level", export_source_.level, "TFRecords: resolution of the level (0: full)")
      ->check(kResolution);
  add_source_options(*export_cmd_, export_source_);
  export_cmd_->add_flag("--overwrite", export_overwrite_, "Write into a non-empty --outdir (never inside the source)");

  bench_cmd_ = app.add_subcommand("bench", "Time the training loader: read + verify + decode + batch");
  bench_cmd_->add_option("path", bench_.path, "Dataset")->required();
  bench_cmd_->add_option("--workers", bench_.workers, "Loader threads (0: in the calling thread)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  bench_cmd_->add_option("--batch", bench_.batch, "Images per batch")->capture_default_str()->check(CLI::Range(1, 65536));
  bench_cmd_->add_option("--batches", bench_.batches, "Batches timed")->capture_default_str()->check(CLI::Range(1, 1000000));
  bench_cmd_->add_option("--prefetch", bench_.prefetch, "Batches decoded ahead")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));

}

int DatasetCommand::run() {
  using namespace data;  // the dataset tool's commands
  if (*create_cmd_) {
    create_.source.transform.filter = parse_resize_filter(filter_);
    create_dataset(create_);
  } else if (*convert_cmd_) {
    CreateOptions convert;
    convert.source.path = convert_source_;
    convert.dest = convert_dest_;
    convert.shuffle = false;
    convert.overwrite = convert_overwrite_;
    create_dataset(convert);
  } else if (*info_cmd_) {
    return print_dataset_info(info_path_, !skip_verify_) ? 0 : 1;
  } else if (*export_cmd_) {
    export_pngs(export_source_, outdir_, export_overwrite_);
  } else if (*bench_cmd_) {
    bench_loader(bench_);
  }
  return 0;
}

}  // namespace sg2::cli
