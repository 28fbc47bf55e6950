// stylegan2_generate: renders images from a snapshot.
//   stylegan2_generate --network runs/00000-x/network-snapshot-000030.pt --seeds 0-63 --trunc 0.7 --outdir out
#include "sg2/core/system.h"
#include "sg2/train/command_line.h"
#include "sg2/train/generate.h"

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Generate images with a StyleGAN2 snapshot (G_ema); one PNG per seed and grid.png."};
  sg2::train::GenerateOptions options;
  std::string seeds = "0-63", noise_mode = "const";
  app.add_option("--network", options.network, "Snapshot file (network-snapshot-*.pt)")->required()->check(CLI::ExistingFile);
  app.add_option("--seeds", seeds, "Seeds, e.g. 0-63 or 1,5,9")->capture_default_str();
  app.add_option("--trunc", options.truncation_psi, "Truncation psi")->capture_default_str();
  app.add_option("--trunc-cutoff", options.truncation_cutoff, "Truncate only the first N ws (-1: all)")->capture_default_str();
  app.add_option("--noise-mode", noise_mode, "Noise: const, random or none")->capture_default_str();
  app.add_option("--class", options.class_index, "Class index for conditional networks");
  app.add_option("--which", options.which, "Network in the snapshot: G_ema or G")->capture_default_str();
  app.add_option("--outdir", options.outdir, "Output directory")->capture_default_str();
  app.add_option("--device", options.device, "auto, cpu or cuda")->capture_default_str();
  app.add_option("--batch", options.batch, "Images per forward pass")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return sg2::train::run_reporting_errors("stylegan2_generate", [&] {
    options.seeds = sg2::parse_index_list(seeds, "--seeds");
    options.noise_mode = sg2::nn::parse_noise_mode(noise_mode);
    const auto written = sg2::train::generate_images(options);
    std::cout << "Wrote " << written.size() - 1 << " images and " << written.back() << "\n";
    return 0;
  });
}
