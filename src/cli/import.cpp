#include "sg2/cli/import.h"

#include "sg2/core/error.h"
#include "sg2/nn/networks.h"
#include "sg2/nn/state_dict.h"
#include "sg2/train/snapshot.h"
#include "sg2/train/training_state.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

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

ImportResult import_reference_networks(const std::string& state_dict_path, const std::string& config_path,
                                       const std::string& out_path, bool overwrite) {
  for (const std::string& input : {state_dict_path, config_path}) {
    std::error_code error;
    SG2_CHECK(!std::filesystem::equivalent(input, out_path, error), "--out '{}' is an input of the import; "
              "write the snapshot to a new path", out_path);
  }
  SG2_CHECK(overwrite || !std::filesystem::exists(out_path),
            "--out '{}' exists; pass --overwrite to replace it, or choose a new path", out_path);
  const nlohmann::json config = read_json(config_path);
  SG2_CHECK(config.contains("G") && config.contains("D"), "'{}' needs \"G\" and \"D\" network options", config_path);
  std::vector<std::string> unknown;
  const nn::GeneratorOptions g = nn::generator_options_from_json(config.at("G"), &unknown);
  const nn::DiscriminatorOptions d = nn::discriminator_options_from_json(config.at("D"), &unknown);
  // A dropped option such as conv_clamp changes no tensor shape: the import would render otherwise.
  SG2_CHECK(unknown.empty(), "'{}': unknown network option(s) {} (the G.* and D.* keys of stylegan2_train, as "
            "scripts/export_pkl.py writes them)", config_path, fmt::join(unknown, ", "));
  const nn::TensorMap tensors = read_state_dict(state_dict_path);
  SG2_CHECK(has_prefix(tensors, "G.") || has_prefix(tensors, "G_ema."),
            "'{}' holds no G.<name> or G_ema.<name> tensors (a state dict saved as {{'G.' + k: v}})", state_dict_path);
  ImportResult result;
  auto G = std::make_shared<nn::Generator>(g), G_ema = std::make_shared<nn::Generator>(g);
  auto D = std::make_shared<nn::Discriminator>(d);
  const std::string G_prefix = has_prefix(tensors, "G.") ? "G." : "G_ema.";
  nn::load_state_dict(*G, tensors, G_prefix, state_dict_path);
  if (has_prefix(tensors, "G_ema.")) {
    nn::load_state_dict(*G_ema, tensors, "G_ema.", state_dict_path);
  } else {
    nn::copy_state(*G, *G_ema);
    result.notes.push_back("no G_ema.* tensors: G_ema is a copy of G");
  }
  if (G_prefix == "G_ema.") result.notes.push_back("no G.* tensors: G is a copy of G_ema");
  if (has_prefix(tensors, "D.")) {
    nn::load_state_dict(*D, tensors, "D.", state_dict_path);
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

void ImportCommand::add_to(CLI::App& app) {
  app.add_option("--state-dict", state_dict_, "torch.save'd dict of G.<name>, D.<name>, G_ema.<name> tensors")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--config", config_, "JSON with the \"G\" and \"D\" network options")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--out", out_, "Snapshot to write (network-snapshot format)")->required();
  app.add_flag("--overwrite", overwrite_, "Replace an existing --out file (never an input)");
}

int ImportCommand::run() {
  const ImportResult result = import_reference_networks(state_dict_, config_, out_, overwrite_);
  for (const std::string& note : result.notes) std::cout << "note: " << note << "\n";
  std::cout << "Wrote " << out_ << " (G " << result.G_parameters << " parameters, D " << result.D_parameters
            << "); render it with stylegan2_generate --network, fine-tune it with stylegan2_train --resume\n";
  return 0;
}

}  // namespace sg2::cli
