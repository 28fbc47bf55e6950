// stylegan2_train: trains StyleGAN2 from a preset (configs/*.yaml) and --key value overrides.
//   stylegan2_train --config configs/config-f.yaml --data.path DIR
//   stylegan2_train --resume latest
#include "sg2/core/cli_parse.h"
#include "sg2/train/command_line.h"

int main(int argc, char** argv) {
  CLI::App app{"Train StyleGAN2 (LibTorch port of stylegan2-ada-pytorch's training loop)."};
  sg2::train::TrainCommand command;
  command.add_to(app);
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::train::run_reporting_errors("stylegan2_train", [&] { return command.run(); });
}
