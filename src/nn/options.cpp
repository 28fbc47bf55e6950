#include "sg2/nn/options.h"

#include "sg2/core/error.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>

namespace sg2::nn {

Architecture parse_architecture(const std::string& name) {
  if (name == "orig") return Architecture::Orig;
  if (name == "skip") return Architecture::Skip;
  if (name == "resnet") return Architecture::Resnet;
  SG2_FAIL("unknown architecture '{}' (expected orig, skip or resnet)", name);
}

std::string to_string(Architecture arch) {
  switch (arch) {
    case Architecture::Orig: return "orig";
    case Architecture::Skip: return "skip";
    case Architecture::Resnet: return "resnet";
  }
  return "?";
}

NoiseMode parse_noise_mode(const std::string& name) {
  if (name == "random") return NoiseMode::Random;
  if (name == "const") return NoiseMode::Const;
  if (name == "none") return NoiseMode::None;
  SG2_FAIL("unknown noise mode '{}' (expected random, const or none)", name);
}

std::string to_string(NoiseMode mode) {
  switch (mode) {
    case NoiseMode::Random: return "random";
    case NoiseMode::Const: return "const";
    case NoiseMode::None: return "none";
  }
  return "?";
}

namespace {

int64_t channels(int64_t base, int64_t max, int64_t resolution) { return std::min(base / resolution, max); }

bool is_power_of_two(int64_t v) { return v >= 4 && (v & (v - 1)) == 0; }

void check_common(const char* net, int64_t resolution, int64_t img_channels, int64_t c_dim, int64_t base,
                  int64_t max) {
  SG2_CHECK(is_power_of_two(resolution), "{}.img_resolution = {}: must be a power of two >= 4", net, resolution);
  SG2_CHECK(img_channels >= 1, "{}.img_channels = {}: must be >= 1", net, img_channels);
  SG2_CHECK(c_dim >= 0, "{}.c_dim = {}: must be >= 0", net, c_dim);
  SG2_CHECK(base >= 1 && max >= 1, "{}.channel_base / channel_max must be positive", net);
  SG2_CHECK(channels(base, max, resolution) >= 1,
            "{}: channel_base {} gives no channels at {}x{} (channel_base must be >= the resolution)", net, base,
            resolution, resolution);
}

// Applies each key of `j` through the matching setter; collects the keys nobody knows.
using Setters = std::map<std::string, std::function<void(const nlohmann::json&)>>;
void apply_json(const nlohmann::json& j, const Setters& setters, std::vector<std::string>* unknown, const char* net) {
  SG2_CHECK(j.is_object(), "{} options must be a JSON object", net);
  for (const auto& [key, value] : j.items()) {
    auto it = setters.find(key);
    if (it == setters.end()) {
      if (unknown) unknown->push_back(std::string(net) + "." + key);
      continue;
    }
    try {
      it->second(value);
    } catch (const nlohmann::json::exception& e) {
      SG2_FAIL("{}.{}: unexpected value {} ({})", net, key, value.dump(), e.what());
    }
  }
}

// null (the reference's None) maps to `none_value`.
double number_or(const nlohmann::json& v, double none_value) { return v.is_null() ? none_value : v.get<double>(); }

}  // namespace

int64_t GeneratorOptions::channels_at(int64_t resolution) const {
  return channels(channel_base, channel_max, resolution);
}

int64_t DiscriminatorOptions::channels_at(int64_t resolution) const {
  return channels(channel_base, channel_max, resolution);
}

int64_t MixedPrecision::lowest_reduced_resolution(int64_t img_resolution) const {
  if (num_fp16_res <= 0) return 0;
  int64_t lowest = img_resolution * 2;
  for (int64_t i = 0; i < num_fp16_res && lowest > 8; ++i) lowest /= 2;
  return std::max<int64_t>(lowest, 8);
}

at::ScalarType MixedPrecision::block_type(int64_t resolution, int64_t img_resolution) const {
  const int64_t lowest = lowest_reduced_resolution(img_resolution);
  return lowest > 0 && resolution >= lowest ? reduced_type : at::kFloat;
}

std::string MixedPrecision::describe(int64_t img_resolution) const {
  const int64_t lowest = lowest_reduced_resolution(img_resolution);
  if (lowest == 0 || lowest > img_resolution) return "float32";
  const std::string type = reduced_type == at::kHalf ? "float16" : "bfloat16";
  return fmt::format("{} from {}x{} up, float32 below", type, lowest, lowest);
}

namespace {

void check_precision(const char* net, const MixedPrecision& p) {
  SG2_CHECK(p.num_fp16_res >= 0, "{}.num_fp16_res = {}: must be >= 0", net, p.num_fp16_res);
  SG2_CHECK(p.reduced_type == at::kHalf || p.reduced_type == at::kBFloat16,
            "{}: the reduced type of mixed precision must be float16 or bfloat16, not {}", net,
            c10::toString(p.reduced_type));
}

}  // namespace

void validate(const GeneratorOptions& g) {
  check_common("G", g.img_resolution, g.img_channels, g.c_dim, g.channel_base, g.channel_max);
  SG2_CHECK(g.z_dim >= 0 && g.w_dim >= 1, "G: z_dim {} / w_dim {} must be >= 0 / >= 1", g.z_dim, g.w_dim);
  SG2_CHECK(g.z_dim + g.c_dim > 0, "G: needs z_dim > 0 or c_dim > 0");
  SG2_CHECK(g.mapping_layers >= 1, "G.mapping_layers = {}: must be >= 1", g.mapping_layers);
  SG2_CHECK(!g.resample_filter.empty(), "G.resample_filter must not be empty");
  check_precision("G", g.precision);
}

void validate(const DiscriminatorOptions& d) {
  check_common("D", d.img_resolution, d.img_channels, d.c_dim, d.channel_base, d.channel_max);
  SG2_CHECK(d.img_resolution >= 8, "D.img_resolution = {}: the discriminator needs at least 8x8", d.img_resolution);
  SG2_CHECK(d.mbstd_num_channels >= 0, "D.mbstd_num_channels = {}: must be >= 0", d.mbstd_num_channels);
  SG2_CHECK(d.mbstd_num_channels == 0 || d.channels_at(4) % d.mbstd_num_channels == 0,
            "D.mbstd_num_channels = {} must divide the {} channels at 4x4", d.mbstd_num_channels, d.channels_at(4));
  SG2_CHECK(d.mapping_layers >= 1, "D.mapping_layers = {}: must be >= 1", d.mapping_layers);
  check_precision("D", d.precision);
}

GeneratorOptions generator_options_from_json(const nlohmann::json& j, std::vector<std::string>* unknown_keys) {
  GeneratorOptions g;
  const Setters setters{
      {"z_dim", [&](const nlohmann::json& v) { g.z_dim = v.get<int64_t>(); }},
      {"c_dim", [&](const nlohmann::json& v) { g.c_dim = v.get<int64_t>(); }},
      {"w_dim", [&](const nlohmann::json& v) { g.w_dim = v.get<int64_t>(); }},
      {"img_resolution", [&](const nlohmann::json& v) { g.img_resolution = v.get<int64_t>(); }},
      {"img_channels", [&](const nlohmann::json& v) { g.img_channels = v.get<int64_t>(); }},
      {"mapping_layers", [&](const nlohmann::json& v) { g.mapping_layers = v.get<int64_t>(); }},
      {"mapping_lr_multiplier", [&](const nlohmann::json& v) { g.mapping_lr_multiplier = v.get<double>(); }},
      {"w_avg_beta", [&](const nlohmann::json& v) { g.w_avg_beta = number_or(v, -1); }},
      {"channel_base", [&](const nlohmann::json& v) { g.channel_base = v.get<int64_t>(); }},
      {"channel_max", [&](const nlohmann::json& v) { g.channel_max = v.get<int64_t>(); }},
      {"architecture", [&](const nlohmann::json& v) { g.architecture = parse_architecture(v.get<std::string>()); }},
      {"conv_clamp", [&](const nlohmann::json& v) { g.conv_clamp = number_or(v, -1); }},
      {"use_noise", [&](const nlohmann::json& v) { g.use_noise = v.get<bool>(); }},
      {"resample_filter", [&](const nlohmann::json& v) { g.resample_filter = v.get<std::vector<float>>(); }},
      {"num_fp16_res", [&](const nlohmann::json&) {}},  // precision does not change the state dict
  };
  apply_json(j, setters, unknown_keys, "G");
  validate(g);
  return g;
}

DiscriminatorOptions discriminator_options_from_json(const nlohmann::json& j, std::vector<std::string>* unknown_keys) {
  DiscriminatorOptions d;
  const Setters setters{
      {"c_dim", [&](const nlohmann::json& v) { d.c_dim = v.get<int64_t>(); }},
      {"img_resolution", [&](const nlohmann::json& v) { d.img_resolution = v.get<int64_t>(); }},
      {"img_channels", [&](const nlohmann::json& v) { d.img_channels = v.get<int64_t>(); }},
      {"architecture", [&](const nlohmann::json& v) { d.architecture = parse_architecture(v.get<std::string>()); }},
      {"channel_base", [&](const nlohmann::json& v) { d.channel_base = v.get<int64_t>(); }},
      {"channel_max", [&](const nlohmann::json& v) { d.channel_max = v.get<int64_t>(); }},
      {"mbstd_group_size", [&](const nlohmann::json& v) { d.mbstd_group_size = v.is_null() ? 0 : v.get<int64_t>(); }},
      {"mbstd_num_channels", [&](const nlohmann::json& v) { d.mbstd_num_channels = v.get<int64_t>(); }},
      {"cmap_dim", [&](const nlohmann::json& v) { d.cmap_dim = v.is_null() ? -1 : v.get<int64_t>(); }},
      {"mapping_layers", [&](const nlohmann::json& v) { d.mapping_layers = v.get<int64_t>(); }},
      {"mapping_lr_multiplier", [&](const nlohmann::json& v) { d.mapping_lr_multiplier = v.get<double>(); }},
      {"conv_clamp", [&](const nlohmann::json& v) { d.conv_clamp = number_or(v, -1); }},
      {"resample_filter", [&](const nlohmann::json& v) { d.resample_filter = v.get<std::vector<float>>(); }},
      {"num_fp16_res", [&](const nlohmann::json&) {}},
  };
  apply_json(j, setters, unknown_keys, "D");
  validate(d);
  return d;
}

nlohmann::json to_json(const GeneratorOptions& g) {
  return {{"z_dim", g.z_dim},
          {"c_dim", g.c_dim},
          {"w_dim", g.w_dim},
          {"img_resolution", g.img_resolution},
          {"img_channels", g.img_channels},
          {"mapping_layers", g.mapping_layers},
          {"mapping_lr_multiplier", g.mapping_lr_multiplier},
          {"w_avg_beta", g.w_avg_beta},
          {"channel_base", g.channel_base},
          {"channel_max", g.channel_max},
          {"architecture", to_string(g.architecture)},
          {"conv_clamp", g.conv_clamp < 0 ? nlohmann::json(nullptr) : nlohmann::json(g.conv_clamp)},
          {"use_noise", g.use_noise},
          {"resample_filter", g.resample_filter}};
}

nlohmann::json to_json(const DiscriminatorOptions& d) {
  return {{"c_dim", d.c_dim},
          {"img_resolution", d.img_resolution},
          {"img_channels", d.img_channels},
          {"architecture", to_string(d.architecture)},
          {"channel_base", d.channel_base},
          {"channel_max", d.channel_max},
          {"mbstd_group_size", d.mbstd_group_size <= 0 ? nlohmann::json(nullptr) : nlohmann::json(d.mbstd_group_size)},
          {"mbstd_num_channels", d.mbstd_num_channels},
          {"cmap_dim", d.cmap_dim < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.cmap_dim)},
          {"mapping_layers", d.mapping_layers},
          {"mapping_lr_multiplier", d.mapping_lr_multiplier},
          {"conv_clamp", d.conv_clamp < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.conv_clamp)},
          {"resample_filter", d.resample_filter}};
}

}  // namespace sg2::nn
