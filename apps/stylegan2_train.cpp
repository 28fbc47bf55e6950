// stylegan2_train: trains StyleGAN2 from a preset (configs/*.yaml) and --key value overrides.
//   stylegan2_train --config configs/config-f.yaml --data.path DIR
//   stylegan2_train --resume latest
#include "sg2/cli/command_line.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Train StyleGAN2 (LibTorch port of stylegan2-ada-pytorch's training loop)."};
  sg2::cli::TrainCommand command;
  command.add_to(app);
  app.footer("Examples:\n"
             "  stylegan2_train --config configs/fashion32.yaml --data /usr/share/datasets/fashion-mnist --kimg 24\n"
             "  mpirun -np 8 stylegan2_train --config configs/config-f.yaml --data /data/ffhq256.zip --outdir runs\n"
             "  stylegan2_train --resume latest --kimg 50");
  if (argc == 1) {  // nothing asked: how to ask, rather than a 25,000 kimg run of the defaults
    std::cerr << "usage: stylegan2_train --config PRESET.yaml --data DATASET [--outdir DIR] [--kimg N] [--key value ...]\n"
                 "       stylegan2_train --resume latest|RUN_DIR|SNAPSHOT.pt [--key value ...]\n"
                 "  e.g. stylegan2_train --config configs/fashion32.yaml --data /usr/share/datasets/fashion-mnist "
                 "--kimg 24\n"
                 "       stylegan2_train --config configs/config-f.yaml --data /data/ffhq256.zip --dry-run\n"
                 "stylegan2_train --help lists every option.\n";
    return 1;
  }
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_train", [&] { return command.run(); }, sg2::train::message_of);
}
