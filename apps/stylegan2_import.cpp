// stylegan2_import: turns a network pickle in the TensorFlow StyleGAN2 form (NVIDIA's original
// pickles, stylegan2_export's), or a stylegan2-ada-pytorch state dict and its configuration JSON
// (scripts/export_pkl.py writes them from that project's pickles), into a snapshot.
//   stylegan2_import --pkl stylegan2-ffhq-config-f.pkl --out ffhq-snapshot.pt
//   stylegan2_import --state-dict ffhq.pt --config ffhq.json --out ffhq-snapshot.pt
#include "sg2/cli/import.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

int main(int argc, char** argv) {
  CLI::App app{"Import pretrained networks as a snapshot: a TensorFlow-form network pickle, or stylegan2-ada-pytorch "
               "networks as a state dict + configuration JSON."};
  sg2::cli::ImportCommand command;
  command.add_to(app);
  app.footer("Examples:\n"
             "  stylegan2_import --pkl stylegan2-ffhq-config-f.pkl --out ffhq-snapshot.pt\n"
             "  python3 scripts/export_pkl.py --repo ~/stylegan2-ada-pytorch --pkl ffhq.pkl --out ffhq\n"
             "  stylegan2_import --state-dict ffhq.pt --config ffhq.json --out ffhq-snapshot.pt\n"
             "  stylegan2_generate --network ffhq-snapshot.pt --seeds 0-7 --outdir out");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_import", [&] { return command.run(); }, sg2::train::message_of);
}
