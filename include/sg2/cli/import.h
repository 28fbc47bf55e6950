#pragma once
// stylegan2_import: a network pickle in the form of NVIDIA's TensorFlow StyleGAN2 (its original
// pickles, and those stylegan2_export writes), or a state dict saved from stylegan2-ada-pytorch
// networks (torch.save of a flat dict with G.<name>, D.<name> and G_ema.<name> keys, the format of
// ../shared/fixtures and of scripts/export_pkl.py) plus its configuration JSON ({"G": {z_dim,
// w_dim, img_resolution, ...}, "D": {...}}) -> a snapshot every app loads. Every tensor is checked
// against the network the options describe (names and shapes). The snapshot is marked imported:
// --resume fine-tunes it in a new run directory with fresh optimizers.

#include "sg2/nn/options.h"
#include "sg2/train/config.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sg2::cli {

using train::TrainConfig;

struct ImportResult {
  int64_t G_parameters = 0, D_parameters = 0;
  std::vector<std::string> notes;  // what was missing and how it was filled
};

ImportResult import_reference_networks(const std::string& state_dict_path, const std::string& config_path,
                                       const std::string& out_path, bool overwrite = false);
// The same from a network pickle in the TensorFlow StyleGAN2 form (nn/tf_network_pickle.h): the
// options come from its static_kwargs, G, D and G_ema (Gs) from its variables.
ImportResult import_tf_network_pickle(const std::string& pkl_path, const std::string& out_path,
                                      bool overwrite = false);

// The training config whose networks are `g` and `d` (config-f defaults for everything else).
TrainConfig config_for_networks(const nn::GeneratorOptions& g, const nn::DiscriminatorOptions& d);

// stylegan2_import: its command line into import_reference_networks; run() prints what it wrote.
class ImportCommand {
 public:
  void add_to(CLI::App& app);
  int run();

 private:
  std::string pkl_, state_dict_, config_, out_;
  bool overwrite_ = false;
};

}  // namespace sg2::cli
