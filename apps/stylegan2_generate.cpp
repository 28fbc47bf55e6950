// stylegan2_generate: renders images from a snapshot: seeds, latents from a .npy file, style-mixing
// figures and interpolation frames.
//   stylegan2_generate --network runs/00000-x/network-snapshot-000030.pt --seeds 0-63 --trunc 0.7 --outdir out
//   stylegan2_generate --network N.pt --seeds 85,100,75 --mix-columns 55,821,1789 --styles 0-6 --outdir mix
//   stylegan2_generate --network N.pt --seeds 1,2,3,1 --interpolate 30 --outdir frames
#include "sg2/cli/generate.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

int main(int argc, char** argv) {
  CLI::App app{"Generate images with a StyleGAN2 snapshot (G_ema): per-seed PNGs and a grid, style mixing, interpolation."};
  sg2::cli::GenerateCommand command;
  command.add_to(app);
  app.footer("Examples:\n"
             "  stylegan2_generate --network runs/00000-x/network-snapshot-000030.pt --seeds 0-63 --trunc 0.7 --outdir out\n"
             "  stylegan2_generate --network N.pt --seeds 85,100,75 --mix-columns 55,821,1789 --styles 0-6 --outdir mix\n"
             "  stylegan2_generate --network N.pt --seeds 1,2,3,1 --interpolate 30 --outdir frames");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_generate", [&] { return command.run(); }, sg2::train::message_of);
}
