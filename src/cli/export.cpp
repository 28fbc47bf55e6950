#include "sg2/cli/export.h"

#include "sg2/core/error.h"
#include "sg2/core/files.h"
#include "sg2/core/progress.h"
#include "sg2/data/atomic_file.h"
#include "sg2/nn/tf_network_pickle.h"
#include "sg2/train/snapshot.h"

#include <iostream>
#include <optional>

namespace sg2::cli {

namespace {

// The float16 blocks of the snapshot's run on a GPU, where the reference would run the pickle
// (0 for float32 or bfloat16 runs: the reference has no bfloat16).
int64_t reference_fp16_blocks(const train::Snapshot& snapshot) {
  const nn::MixedPrecision precision = train::snapshot_precision(snapshot, at::Device(at::kCUDA));
  return precision.reduced_type == at::kHalf ? precision.num_fp16_res : 0;
}

}  // namespace

ExportResult export_network_pickle(const std::string& snapshot_path, const std::string& out_path, bool overwrite) {
  check_output_file("--out", out_path, overwrite, {{snapshot_path, "the snapshot it exports"}});
  const train::Snapshot snapshot = train::load_snapshot(snapshot_path);
  nn::PickledNetworks networks;
  networks.G = nn::generator_options_from_json(snapshot.networks.at("G"));
  networks.D = nn::discriminator_options_from_json(snapshot.networks.at("D"));
  networks.num_fp16_res = reference_fp16_blocks(snapshot);
  for (const auto& [name, tensor] : snapshot.tensors) {
    for (const char* prefix : {"G.", "D.", "G_ema."}) {
      if (name.rfind(prefix, 0) == 0) networks.tensors[name] = tensor;
    }
  }
  std::optional<ProgressMeter> meter;
  const std::string bytes = nn::tf_network_pickle(networks, meter_reporter(meter, "export", "variables"));
  if (meter) meter->finish();
  data::write_file_atomically(out_path, bytes.data(), bytes.size());
  return {static_cast<int64_t>(networks.tensors.size()), networks.num_fp16_res, bytes.size()};
}

void ExportCommand::add_to(CLI::App& app) {
  app.add_option("--network", network_, "Snapshot to export (network-snapshot-*.pt)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_, "Network pickle to write (.pkl)")->required();
  app.add_flag("--overwrite", overwrite_, "Replace an existing --out file (never the snapshot)");
}

int ExportCommand::run() {
  const ExportResult result = export_network_pickle(network_, out_, overwrite_);
  std::cout << fmt::format("Wrote {} ({:.1f} MB: G, D and G_ema as (G, D, Gs); num_fp16_res {}). Load it with "
                           "stylegan2-ada-pytorch's legacy.load_network_pkl, e.g. python generate.py --network {} "
                           "--seeds 0-7 --outdir out\n",
                           out_, static_cast<double>(result.bytes) / 1e6, result.num_fp16_res, out_, out_);
  return 0;
}

}  // namespace sg2::cli
