// stylegan2_import: turns a stylegan2-ada-pytorch state dict (scripts/export_pkl.py writes one from
// NVIDIA's network pickles) and its configuration JSON into a snapshot.
//   stylegan2_import --state-dict ffhq.pt --config ffhq.json --out ffhq-snapshot.pt
#include "sg2/cli/import.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Import stylegan2-ada-pytorch networks (state dict + configuration JSON) as a snapshot."};
  std::string state_dict, config, out;
  app.add_option("--state-dict", state_dict, "torch.save'd dict of G.<name>, D.<name>, G_ema.<name> tensors")
      ->required()->check(CLI::ExistingFile);
  app.add_option("--config", config, "JSON with the \"G\" and \"D\" network options")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out, "Snapshot to write (network-snapshot format)")->required();
  bool overwrite = false;
  app.add_flag("--overwrite", overwrite, "Replace an existing --out file (never an input)");
  app.footer("Examples:\n"
             "  python3 scripts/export_pkl.py --repo ~/stylegan2-ada-pytorch --pkl ffhq.pkl --out ffhq\n"
             "  stylegan2_import --state-dict ffhq.pt --config ffhq.json --out ffhq-snapshot.pt\n"
             "  stylegan2_generate --network ffhq-snapshot.pt --seeds 0-7 --outdir out");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_import", [&] {
    const auto result = sg2::cli::import_reference_networks(state_dict, config, out, overwrite);
    for (const std::string& note : result.notes) std::cout << "note: " << note << "\n";
    std::cout << "Wrote " << out << " (G " << result.G_parameters << " parameters, D " << result.D_parameters
              << "); render it with stylegan2_generate --network, fine-tune it with stylegan2_train --resume\n";
    return 0;
  }, sg2::train::message_of);
}
