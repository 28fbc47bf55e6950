// stylegan2_metrics: FID / KID of a snapshot, and the built-in feature detector.
//   mpirun -np 2 stylegan2_metrics --network runs/00000-x/network-snapshot-000024.pt --metrics fid50k_full
//         --detector inception-2015-12-05.pt
//   stylegan2_metrics train-detector --data /usr/share/datasets/fashion-mnist --heldout-split test --out fmnist.pt
#include "sg2/cli/command_line.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

int main(int argc, char** argv) {
  CLI::App app{"Evaluate FID, KID or precision/recall of a StyleGAN2 snapshot (any number of ranks), or train the built-in detector."};
  sg2::cli::MetricsCommand metrics;
  metrics.add_to(app);
  app.footer("Examples:\n"
             "  stylegan2_metrics --network runs/00000-fashion-mnist-fashion32/network-snapshot-000024.pt "
             "--metrics fid10k_full\n"
             "  mpirun -np 8 stylegan2_metrics --network snap.pt --metrics fid50k_full,kid50k_full "
             "--detector inception-2015-12-05.pt --data /data/ffhq.zip\n"
             "  stylegan2_metrics train-detector --data /usr/share/datasets/fashion-mnist --heldout-split test "
             "--out fmnist.pt\n"
             "Training keys (G.*, D.*, train.*, ...) are accepted but not listed: the snapshot's config gives them.");
  sg2::cli::DetectorCommand detector;
  CLI::App* train_detector = app.add_subcommand("train-detector", "Train the built-in CNN feature detector");
  train_detector->allow_extras(false);  // created after the main command's allow_extras(), whose setting it copies
  detector.add_to(*train_detector);
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_metrics", [&] {
    if (!train_detector->parsed()) return metrics.run();
    std::string ignored;  // the metrics command's options before train-detector, which it does not read
    for (const CLI::Option* option : app.get_options()) {
      if (option->count() > 0) ignored += " " + option->get_name();
    }
    for (const std::string& extra : app.remaining()) ignored += " " + extra;
    SG2_CHECK(ignored.empty(), "train-detector takes none of:{} (they belong to the metrics command)", ignored);
    return detector.run();
  }, sg2::train::message_of);
}
