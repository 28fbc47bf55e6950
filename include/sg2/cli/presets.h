#pragma once
// Preset names: `--config paper256` (or `--cfg paper256`, as the reference's train.py) finds the
// shipped configs/paper256.yaml; a path to a YAML file works as before. Presets are looked up in
// $SG2_PRESET_DIR, then beside the installed programs (<prefix>/share/stylegan2-cpp/configs), then in
// the source tree the programs were built from.

#include <string>
#include <vector>

namespace sg2::cli {

// The directories searched for presets, in order (those that exist).
std::vector<std::string> preset_directories();
// The preset names found there ("config-f", "paper256", ...), sorted, each once.
std::vector<std::string> preset_names();
// An existing file as given; else a name without '/' as its preset's file; else an error naming the
// value and listing the presets.
std::string preset_or_file(const std::string& spec);

}  // namespace sg2::cli
