// stylegan2_generate: renders images from a snapshot: seeds, latents from a .npy file, style-mixing
// figures and interpolation frames.
//   stylegan2_generate --network runs/00000-x/network-snapshot-000030.pt --seeds 0-63 --trunc 0.7 --outdir out
//   stylegan2_generate --network N.pt --seeds 85,100,75 --mix-columns 55,821,1789 --styles 0-6 --outdir mix
//   stylegan2_generate --network N.pt --seeds 1,2,3,1 --interpolate 30 --outdir frames
#include "sg2/cli/generate.h"
#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/core/system.h"
#include "sg2/train/out_of_memory.h"

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Generate images with a StyleGAN2 snapshot (G_ema): per-seed PNGs and a grid, style mixing, interpolation."};
  sg2::cli::GenerateOptions options;
  std::string seeds = "0-63", noise_mode = "const", columns, styles;
  app.add_option("--network", options.network, "Snapshot file (network-snapshot-*.pt)")->required()->check(CLI::ExistingFile);
  auto* seeds_option = app.add_option("--seeds", seeds, "Seeds, e.g. 0-63 or 1,5,9 (style mixing: the rows)");
  seeds_option->capture_default_str();
  app.add_option("--latents", options.latents_file, "float32 .npy [N, z_dim] of latents to render instead of seeds")
      ->check(CLI::ExistingFile)
      ->excludes(seeds_option);
  app.add_option("--mix-columns", columns, "Style mixing: column seeds whose styles replace the rows'");
  app.add_option("--styles", styles, "Style mixing: ws indices taken from the columns (default 0-6)");
  app.add_option("--interpolate", options.interpolation_frames, "Frames between consecutive seeds (linear in W)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--trunc", options.truncation_psi, "Truncation psi")->capture_default_str();
  app.add_option("--trunc-cutoff", options.truncation_cutoff, "Truncate only the first N ws (-1: all)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 1 << 20));
  app.add_option("--noise-mode", noise_mode, "Noise: const, random or none")->capture_default_str();
  app.add_option("--class", options.class_index, "Class index for conditional networks");
  app.add_option("--which", options.which, "Network in the snapshot: G_ema or G")->capture_default_str();
  app.add_option("--outdir", options.outdir, "Output directory")->capture_default_str();
  app.add_flag("--overwrite", options.overwrite, "Replace images an earlier run wrote to --outdir");
  std::string device = "auto";
  app.add_option("--device", device, "Device to render on")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--batch", options.batch, "Images per forward pass")->capture_default_str()->check(CLI::Range(1, 65536));
  app.footer("Examples:\n"
             "  stylegan2_generate --network runs/00000-x/network-snapshot-000030.pt --seeds 0-63 --trunc 0.7 --outdir out\n"
             "  stylegan2_generate --network N.pt --seeds 85,100,75 --mix-columns 55,821,1789 --styles 0-6 --outdir mix\n"
             "  stylegan2_generate --network N.pt --seeds 1,2,3,1 --interpolate 30 --outdir frames");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  return sg2::run_reporting_errors("stylegan2_generate", [&] {
    if (options.latents_file.empty()) options.seeds = sg2::parse_index_list(seeds, "--seeds");
    if (!columns.empty()) options.mix_columns = sg2::parse_index_list(columns, "--mix-columns");
    if (!styles.empty()) options.mix_styles = sg2::parse_index_list(styles, "--styles");
    options.noise_mode = sg2::nn::parse_noise_mode(noise_mode);
    options.device = sg2::parse_enum(sg2::train::kDeviceChoiceNames, device, "--device");
    sg2::limit_blas_threads();
    const auto written = sg2::cli::generate_images(options);
    std::cout << "Wrote " << written.size() << (written.size() == 1 ? " file: " : " files: ") << written.front()
              << (written.size() > 1 ? " ... " + written.back() : std::string()) << "\n";
    return 0;
  }, sg2::train::message_of);
}
