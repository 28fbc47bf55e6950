// stylegan2_export: writes a snapshot as a network pickle that stylegan2-ada-pytorch's tools load.
//   stylegan2_export --network runs/00000-paper256/network-snapshot-005000.pt --out ffhq.pkl
#include "sg2/cli/export.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

int main(int argc, char** argv) {
  CLI::App app{"Export a snapshot as a network pickle in the TensorFlow StyleGAN2 form, which "
               "stylegan2-ada-pytorch's legacy.load_network_pkl (generate.py, projector.py, ...) loads."};
  sg2::cli::ExportCommand command;
  command.add_to(app);
  app.footer("Examples:\n"
             "  stylegan2_export --network runs/00000-paper256/network-snapshot-005000.pt --out paper256.pkl\n"
             "  python generate.py --network paper256.pkl --seeds 0-7 --trunc 0.7 --outdir out   "
             "(in stylegan2-ada-pytorch)\n"
             "  stylegan2_import --pkl paper256.pkl --out snapshot.pt");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_export", [&] { return command.run(); }, sg2::train::message_of);
}
