#include "sg2/cli/import.h"

#include "sg2/core/error.h"
#include "sg2/nn/networks.h"
#include "sg2/core/files.h"
#include "sg2/core/progress.h"
#include "sg2/nn/state_dict.h"
#include "sg2/nn/tf_network_pickle.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/training_state.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace sg2::cli {

using namespace train;  // the command layer drives the training library

namespace {

using nn::has_prefix;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  SG2_CHECK(in.good(), "cannot open the configuration '{}'", path);
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    SG2_FAIL("'{}' is not JSON: {}", path, e.what());
  }
}

// The tensors of a state dict; one of our snapshots is verified against its checksum first.
nn::TensorMap read_state_dict(const std::string& path) {
  const auto dict = read_pickled_dict(path);
  if (is_snapshot_dict(dict)) verify_snapshot_checksum(dict, path);
  return nn::to_tensor_map(c10::IValue(dict), path);
}

}  // namespace

TrainConfig config_for_networks(const nn::GeneratorOptions& g, const nn::DiscriminatorOptions& d) {
  TrainConfig c;
  c.run.preset = "imported";
  c.data.path = "";  // no training data known: metrics and fine-tuning must be given --data
  c.data.resolution = g.img_resolution;
  c.data.channels = g.img_channels;
  c.data.use_labels = g.c_dim > 0;
  static_cast<nn::GeneratorOptions&>(c.G) = g;
  static_cast<nn::DiscriminatorOptions&>(c.D) = d;
  return c;
}

namespace {

// The snapshot of networks `g` and `d` with the G., D. and G_ema. tensors of `tensors` (each
// checked against the networks by name and shape); what is missing is filled and noted.
ImportResult write_imported_snapshot(const nn::GeneratorOptions& g, const nn::DiscriminatorOptions& d,
                                     const nn::TensorMap& tensors, const std::string& source,
                                     const std::string& out_path) {
  SG2_CHECK(has_prefix(tensors, "G.") || has_prefix(tensors, "G_ema."),
            "'{}' holds no G.<name> or G_ema.<name> tensors (a state dict saved as {{'G.' + k: v}})", source);
  ImportResult result;
  auto G = std::make_shared<nn::Generator>(g), G_ema = std::make_shared<nn::Generator>(g);
  auto D = std::make_shared<nn::Discriminator>(d);
  const std::string G_prefix = has_prefix(tensors, "G.") ? "G." : "G_ema.";
  nn::load_state_dict(*G, tensors, G_prefix, source);
  if (has_prefix(tensors, "G_ema.")) {
    nn::load_state_dict(*G_ema, tensors, "G_ema.", source);
  } else {
    nn::copy_state(*G, *G_ema);
    result.notes.push_back("no G_ema.* tensors: G_ema is a copy of G");
  }
  if (G_prefix == "G_ema.") result.notes.push_back("no G.* tensors: G is a copy of G_ema");
  if (has_prefix(tensors, "D.")) {
    nn::load_state_dict(*D, tensors, "D.", source);
  } else {
    result.notes.push_back("no D.* tensors: D is freshly initialised (fine-tuning relearns it)");
  }
  TrainingState state;  // the networks only: no optimizer state, progress 0
  state.add_networks(*G, *D, *G_ema);
  Progress start;
  state.add_progress(start);
  auto dict = snapshot_dict(train_schema().to_yaml_string(config_for_networks(g, d)), state);
  dict.insert("imported", int64_t{1});
  dict.insert("world_size", int64_t{1});
  write_snapshot_dict(out_path, dict);
  result.G_parameters = nn::count_parameters(*G);
  result.D_parameters = nn::count_parameters(*D);
  return result;
}

}  // namespace

ImportResult import_reference_networks(const std::string& state_dict_path, const std::string& config_path,
                                       const std::string& out_path, bool overwrite) {
  check_output_file("--out", out_path, overwrite,
                    {{state_dict_path, "an input of the import"}, {config_path, "an input of the import"}});
  const nlohmann::json config = read_json(config_path);
  SG2_CHECK(config.contains("G") && config.contains("D"), "'{}' needs \"G\" and \"D\" network options", config_path);
  std::vector<std::string> unknown;
  const nn::GeneratorOptions g = nn::generator_options_from_json(config.at("G"), &unknown);
  const nn::DiscriminatorOptions d = nn::discriminator_options_from_json(config.at("D"), &unknown);
  // A dropped option such as conv_clamp changes no tensor shape: the import would render otherwise.
  SG2_CHECK(unknown.empty(), "'{}': unknown network option(s) {} (the G.* and D.* keys of stylegan2_train, as "
            "scripts/export_pkl.py writes them)", config_path, fmt::join(unknown, ", "));
  return write_imported_snapshot(g, d, read_state_dict(state_dict_path), state_dict_path, out_path);
}

ImportResult import_tf_network_pickle(const std::string& pkl_path, const std::string& out_path, bool overwrite) {
  check_output_file("--out", out_path, overwrite, {{pkl_path, "an input of the import"}});
  const std::vector<char> bytes = read_file_bytes<char>(pkl_path);
  std::optional<ProgressMeter> meter;
  nn::PickledNetworks networks = nn::read_tf_network_pickle(std::string(bytes.begin(), bytes.end()), pkl_path,
                                                            meter_reporter(meter, "import", "variables"));
  if (meter) meter->finish();
  ImportResult result = write_imported_snapshot(networks.G, networks.D, networks.tensors, pkl_path, out_path);
  result.notes.insert(result.notes.begin(), networks.notes.begin(), networks.notes.end());
  return result;
}

void ImportCommand::add_to(CLI::App& app) {
  auto* pkl = app.add_option("--pkl", pkl_, "Network pickle in the TensorFlow StyleGAN2 form (NVIDIA's original "
                              "pickles, stylegan2_export's)")
                   ->check(CLI::ExistingFile);
  auto* state_dict = app.add_option("--state-dict", state_dict_, "torch.save'd dict of G.<name>, D.<name>, "
                                    "G_ema.<name> tensors (with --config)")
                         ->check(CLI::ExistingFile);
  auto* config = app.add_option("--config", config_, "JSON with the \"G\" and \"D\" network options (with "
                                "--state-dict)")
                     ->check(CLI::ExistingFile);
  state_dict->needs(config), config->needs(state_dict);
  pkl->excludes(state_dict)->excludes(config);
  app.add_option("--out", out_, "Snapshot to write (network-snapshot format)")->required();
  app.add_flag("--overwrite", overwrite_, "Replace an existing --out file (never an input)");
}

int ImportCommand::run() {
  SG2_CHECK(!pkl_.empty() || !state_dict_.empty(), "give --pkl FILE, or --state-dict FILE with --config FILE");
  const ImportResult result = pkl_.empty() ? import_reference_networks(state_dict_, config_, out_, overwrite_)
                                           : import_tf_network_pickle(pkl_, out_, overwrite_);
  for (const std::string& note : result.notes) std::cout << "note: " << note << "\n";
  std::cout << "Wrote " << out_ << " (G " << result.G_parameters << " parameters, D " << result.D_parameters
            << "); render it with stylegan2_generate --network, fine-tune it with stylegan2_train --resume\n";
  return 0;
}

}  // namespace sg2::cli
