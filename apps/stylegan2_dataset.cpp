// stylegan2_dataset: makes, checks, exports, converts and benchmarks datasets.
//   stylegan2_dataset create --source /usr/share/datasets/fashion-mnist --dest data/fashion-mnist
//   stylegan2_dataset create --source photos/ --dest data/faces --resolution 256 --filter lanczos
//   stylegan2_dataset info data/fashion-mnist
//   stylegan2_dataset export data/fashion-mnist --outdir pngs --max-images 100
//   stylegan2_dataset convert data/fashion-mnist fashion.zip
//   stylegan2_dataset bench data/fashion-mnist --workers 2
#include "sg2/cli/dataset_command.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"StyleGAN2 datasets: TFRecord directories (the original's), stylegan2-ada ZIPs and image folders, "
               "made from image folders, ZIPs, TFRecords or Fashion-MNIST's IDX files."};
  app.footer("Examples:\n"
             "  stylegan2_dataset create --source /usr/share/datasets/fashion-mnist --dest data/fashion-mnist\n"
             "  stylegan2_dataset create --source photos/ --dest data/faces.zip --resolution 256 --channels 3\n"
             "  stylegan2_dataset info data/faces.zip\n"
             "  stylegan2_dataset export data/fashion-mnist --outdir pngs --max-images 100\n"
             "stylegan2_dataset COMMAND --help lists a command's options.");
  sg2::cli::DatasetCommand command;
  command.add_to(app);
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_dataset", [&] { return command.run(); });
}
