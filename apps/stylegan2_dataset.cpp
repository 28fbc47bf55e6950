// stylegan2_dataset: makes, checks, exports, converts and benchmarks datasets.
//   stylegan2_dataset create --source /usr/share/datasets/fashion-mnist --dest data/fashion-mnist
//   stylegan2_dataset create --source photos/ --dest data/faces --resolution 256 --filter lanczos
//   stylegan2_dataset info data/fashion-mnist
//   stylegan2_dataset export data/fashion-mnist --outdir pngs --max-images 100
//   stylegan2_dataset convert data/fashion-mnist fashion.zip
//   stylegan2_dataset bench data/fashion-mnist --workers 2
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/data/dataset_tool.h"

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

void add_source_options(CLI::App& command, sg2::data::SourceOptions& source) {
  command.add_option("--max-images", source.max_images, "Use only the first N images (0: all)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  command.add_option("--split", source.split, "Fashion-MNIST source: train, test or all")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"StyleGAN2 datasets: TFRecord directories (the original's), stylegan2-ada ZIPs and image folders, "
               "made from image folders, ZIPs, TFRecords or Fashion-MNIST's IDX files."};
  app.require_subcommand(1);
  app.footer("Examples:\n"
             "  stylegan2_dataset create --source /usr/share/datasets/fashion-mnist --dest data/fashion-mnist\n"
             "  stylegan2_dataset create --source photos/ --dest data/faces.zip --resolution 256 --channels 3\n"
             "  stylegan2_dataset info data/faces.zip\n"
             "  stylegan2_dataset export data/fashion-mnist --outdir pngs --max-images 100\n"
             "stylegan2_dataset COMMAND --help lists a command's options.");
  std::string filter = "lanczos";

  sg2::data::CreateOptions create;
  CLI::App* create_cmd = app.add_subcommand("create", "Make a dataset from images, Fashion-MNIST IDX files or a ZIP");
  create_cmd->add_option("--source", create.source.path, "Folder of PNG/JPEG images, stylegan2-ada ZIP, TFRecord "
                         "directory or Fashion-MNIST IDX directory")->required();
  create_cmd->add_option("--dest", create.dest, "Output: a directory (TFRecords, all levels) or a .zip path")->required();
  create_cmd->add_option("--resolution", create.source.transform.resolution,
                         "Center-crop and resize images to RxR (0: keep; images must then be square powers of two)")
      ->check(kResolution);
  create_cmd->add_option("--channels", create.source.transform.channels, "Convert to 1 (gray) or 3 (RGB) channels")
      ->check(CLI::IsMember({0, 1, 3}));
  create_cmd->add_option("--filter", filter, "Resize filter: box or lanczos")->capture_default_str();
  create_cmd->add_flag("!--no-shuffle", create.shuffle, "Keep the source order (default: the original's seeded shuffle)");
  create_cmd->add_flag("!--no-labels", create.labels, "Do not write the source's labels");
  create_cmd->add_option("--workers", create.workers, "Threads decoding and encoding")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  create_cmd->add_flag("--overwrite", create.overwrite, "Replace an existing ZIP destination");
  add_source_options(*create_cmd, create.source);

  std::string convert_source, convert_dest;
  bool convert_overwrite = false;
  CLI::App* convert_cmd = app.add_subcommand("convert", "Convert between a TFRecord directory and a ZIP, order kept");
  convert_cmd->add_option("source", convert_source, "TFRecord directory or ZIP/folder")->required();
  convert_cmd->add_option("dest", convert_dest, "Directory (TFRecords) or .zip path")->required();
  convert_cmd->add_flag("--overwrite", convert_overwrite, "Replace an existing ZIP destination");

  std::string info_path;
  bool skip_verify = false;
  CLI::App* info_cmd = app.add_subcommand("info", "Print count, shape, labels and levels; check every record");
  info_cmd->add_option("path", info_path, "Dataset")->required();
  info_cmd->add_flag("--no-verify", skip_verify, "Skip reading every record of every level");

  sg2::data::SourceOptions export_source;
  std::string outdir;
  CLI::App* export_cmd = app.add_subcommand("export", "Write the images of a dataset as PNG files");
  export_cmd->add_option("path", export_source.path, "Dataset")->required();
  export_cmd->add_option("--outdir", outdir, "Output directory")->required();
  export_cmd->add_option("--level", export_source.level, "TFRecords: resolution of the level (0: full)")
      ->check(kResolution);
  add_source_options(*export_cmd, export_source);
  bool export_overwrite = false;
  export_cmd->add_flag("--overwrite", export_overwrite, "Write into a non-empty --outdir (never inside the source)");

  sg2::data::LoaderBenchOptions bench;
  CLI::App* bench_cmd = app.add_subcommand("bench", "Time the training loader: read + verify + decode + batch");
  bench_cmd->add_option("path", bench.path, "Dataset")->required();
  bench_cmd->add_option("--workers", bench.workers, "Loader threads (0: in the calling thread)")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  bench_cmd->add_option("--batch", bench.batch, "Images per batch")->capture_default_str()->check(CLI::Range(1, 65536));
  bench_cmd->add_option("--batches", bench.batches, "Batches timed")->capture_default_str()->check(CLI::Range(1, 1000000));
  bench_cmd->add_option("--prefetch", bench.prefetch, "Batches decoded ahead")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));

  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_dataset", [&] {
    if (*create_cmd) {
      create.source.transform.filter = sg2::data::parse_resize_filter(filter);
      sg2::data::create_dataset(create);
    } else if (*convert_cmd) {
      sg2::data::CreateOptions convert;
      convert.source.path = convert_source;
      convert.dest = convert_dest;
      convert.shuffle = false;
      convert.overwrite = convert_overwrite;
      sg2::data::create_dataset(convert);
    } else if (*info_cmd) {
      return sg2::data::print_dataset_info(info_path, !skip_verify) ? 0 : 1;
    } else if (*export_cmd) {
      sg2::data::export_pngs(export_source, outdir, export_overwrite);
    } else if (*bench_cmd) {
      sg2::data::bench_loader(bench);
    }
    return 0;
  });
}
