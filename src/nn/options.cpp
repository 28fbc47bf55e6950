#include "sg2/nn/options.h"

#include "sg2/core/config_json.h"
#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"

#include <cmath>

namespace sg2::nn {

namespace {
constexpr EnumNames<NoiseMode, 3> kNoiseModes{
    {{NoiseMode::Random, "random"}, {NoiseMode::Const, "const"}, {NoiseMode::None, "none"}}};
}  // namespace

NoiseMode parse_noise_mode(const std::string& name) { return parse_enum(kNoiseModes, name, "noise mode"); }
std::string to_string(NoiseMode mode) { return enum_name(kNoiseModes, mode); }

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

at::MemoryFormat MixedPrecision::block_memory_format(at::ScalarType type) const {
  const bool nhwc = channels_last == ChannelsLast::All || (channels_last == ChannelsLast::Reduced && type != at::kFloat);
  return nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

std::string MixedPrecision::describe(int64_t img_resolution) const {
  const int64_t lowest = lowest_reduced_resolution(img_resolution);
  const bool reduced = lowest > 0 && lowest <= img_resolution;
  const std::string type = reduced_type == at::kHalf ? "float16" : "bfloat16";
  const std::string types = reduced ? fmt::format("{} from {}x{} up, float32 below", type, lowest, lowest) : "float32";
  if (channels_last == ChannelsLast::All) return types + ", channels_last";
  if (channels_last == ChannelsLast::Reduced && reduced) return fmt::format("{}, channels_last in {}", types, type);
  return types;
}

std::string MixedPrecision::overflow_warning(const char* net, int64_t img_resolution, double conv_clamp) const {
  const int64_t lowest = lowest_reduced_resolution(img_resolution);
  if (reduced_type != at::kHalf || lowest == 0 || lowest > img_resolution || conv_clamp >= 0) return "";
  return fmt::format("{0}.num_fp16_res = {1} runs float16 from {2}x{2} up without {0}.conv_clamp: activations may "
                     "overflow to inf and the losses to NaN; the reference always pairs it with {0}.conv_clamp 256",
                     net, num_fp16_res, lowest);
}

std::string describe_precision(const GeneratorOptions& g, const DiscriminatorOptions& d) {
  const auto clamp = [](double value) { return value >= 0 ? fmt::format("{}", value) : std::string("off"); };
  return fmt::format("G {}, conv_clamp {}; D {}, conv_clamp {}", g.precision.describe(g.img_resolution),
                     clamp(g.conv_clamp), d.precision.describe(d.img_resolution), clamp(d.conv_clamp));
}

namespace {

// Far beyond any StyleGAN (512 features, 8 mapping layers): larger is a typo that would only exhaust memory.
constexpr int64_t kMaxFeatures = 65536;
constexpr int64_t kMaxMappingLayers = 64;

// A resampling filter is normalised by its sum: it must have one (and finite taps).
void check_filter(const char* net, const std::vector<float>& filter) {
  SG2_CHECK(!filter.empty() && filter.size() <= 64, "{}.resample_filter: {} taps, expected 1 to 64", net, filter.size());
  double sum = 0;
  for (float tap : filter) {
    SG2_CHECK(std::isfinite(tap) && std::abs(tap) <= 1e6, "{}.resample_filter: tap {} must be finite, at most 1e6",
              net, tap);
    sum += tap;
  }
  SG2_CHECK(std::abs(sum) > 1e-6, "{}.resample_filter {}: its taps sum to {}, and a filter is normalised by its sum",
            net, filter, sum);
}

void check_precision(const char* net, const MixedPrecision& p) {
  SG2_CHECK(p.num_fp16_res >= 0, "{}.num_fp16_res = {}: must be >= 0 (0: all float32)", net, p.num_fp16_res);
  SG2_CHECK(p.reduced_type == at::kHalf || p.reduced_type == at::kBFloat16,
            "{}: the reduced type of mixed precision must be float16 or bfloat16, not {}", net,
            c10::toString(p.reduced_type));
}

}  // namespace

void validate(const GeneratorOptions& g) {
  check_common("G", g.img_resolution, g.img_channels, g.c_dim, g.channel_base, g.channel_max);
  validate_own_options(g);
  SG2_CHECK(g.z_dim + g.c_dim > 0, "G: needs z_dim > 0 or c_dim > 0");
}

void validate_own_options(const GeneratorOptions& g) {
  SG2_CHECK(g.z_dim >= 0 && g.z_dim <= kMaxFeatures, "G.z_dim = {}: must be 0 to {}", g.z_dim, kMaxFeatures);
  SG2_CHECK(g.w_dim >= 1 && g.w_dim <= kMaxFeatures, "G.w_dim = {}: must be 1 to {}", g.w_dim, kMaxFeatures);
  SG2_CHECK(g.mapping_layers >= 1 && g.mapping_layers <= kMaxMappingLayers, "G.mapping_layers = {}: must be 1 to {}",
            g.mapping_layers, kMaxMappingLayers);
  SG2_CHECK(std::isfinite(g.mapping_lr_multiplier) && g.mapping_lr_multiplier > 0,
            "G.mapping_lr_multiplier = {}: must be > 0", g.mapping_lr_multiplier);
  check_filter("G", g.resample_filter);
  check_precision("G", g.precision);
}

void validate(const DiscriminatorOptions& d) {
  check_common("D", d.img_resolution, d.img_channels, d.c_dim, d.channel_base, d.channel_max);
  SG2_CHECK(d.img_resolution >= 8, "D.img_resolution = {}: the discriminator needs at least 8x8", d.img_resolution);
  validate_own_options(d);
}

void validate_own_options(const DiscriminatorOptions& d) {
  SG2_CHECK(d.mbstd_num_channels >= 0, "D.mbstd_num_channels = {}: must be >= 0", d.mbstd_num_channels);
  SG2_CHECK(d.mbstd_num_channels == 0 || d.channels_at(4) % d.mbstd_num_channels == 0,
            "D.mbstd_num_channels = {} must divide the {} channels at 4x4", d.mbstd_num_channels, d.channels_at(4));
  SG2_CHECK(d.mapping_layers >= 0 && d.mapping_layers <= kMaxMappingLayers,
            "D.mapping_layers = {}: must be 0 (the label embedding alone) to {}", d.mapping_layers, kMaxMappingLayers);
  SG2_CHECK(std::isfinite(d.mapping_lr_multiplier) && d.mapping_lr_multiplier > 0,
            "D.mapping_lr_multiplier = {}: must be > 0", d.mapping_lr_multiplier);
  check_filter("D", d.resample_filter);
  check_precision("D", d.precision);
}

namespace {

// The reference's num_fp16_res: its float16 blocks, which no parameter shows, so that networks
// read from its options compute as its pickle did (null: all float32).
int64_t reference_fp16_blocks(const nlohmann::json& value, const char* net) {
  if (value.is_null()) return 0;
  SG2_CHECK(value.is_number_integer(), "{}.num_fp16_res = {}: expected an integer >= 0 (0: all float32)", net,
            value.dump());
  return value.get<int64_t>();
}

template <class Options>
Options options_from_json(const config::Schema<Options>& schema, const nlohmann::json& j,
                          std::vector<std::string>* unknown_keys, const char* net) {
  Options options;
  for (const std::string& key : config::read_json(schema, options, j, fmt::format("the {} options", net))) {
    if (key == "num_fp16_res") {
      options.precision.num_fp16_res = reference_fp16_blocks(j.at(key), net);
    } else if (unknown_keys != nullptr) {
      unknown_keys->push_back(std::string(net) + "." + key);
    }
  }
  validate(options);
  return options;
}

}  // namespace

GeneratorOptions generator_options_from_json(const nlohmann::json& j, std::vector<std::string>* unknown_keys) {
  return options_from_json(generator_schema(), j, unknown_keys, "G");
}

DiscriminatorOptions discriminator_options_from_json(const nlohmann::json& j, std::vector<std::string>* unknown_keys) {
  return options_from_json(discriminator_schema(), j, unknown_keys, "D");
}

nlohmann::json to_json(const GeneratorOptions& g) { return config::to_json(generator_schema(), g); }

nlohmann::json to_json(const DiscriminatorOptions& d) { return config::to_json(discriminator_schema(), d); }

namespace {

// SG2_OPTION(z_dim, "help") registers Options::z_dim under the key "z_dim".
#define SG2_OPTION(name, help) s.add(#name, [](Options& o) -> auto& { return o.name; }, help)

config::Schema<GeneratorOptions> make_generator_schema() {
  using Options = GeneratorOptions;
  config::Schema<Options> s;
  SG2_OPTION(z_dim, "Input latent (Z) dimensionality");
  SG2_OPTION(c_dim, "Conditioning label (C) dimensionality (0: unconditional)");
  SG2_OPTION(w_dim, "Intermediate latent (W) dimensionality");
  SG2_OPTION(img_resolution, "Output resolution");
  SG2_OPTION(img_channels, "Output channels");
  SG2_OPTION(mapping_layers, "Number of mapping network layers");
  SG2_OPTION(mapping_lr_multiplier, "Learning rate multiplier of the mapping network");
  SG2_OPTION(w_avg_beta, "Decay of the tracked average of W, for truncation (null: not tracked)").none_is(-1.0);
  SG2_OPTION(channel_base, "Generator channels at resolution r: min(channel_base / r, channel_max)");
  SG2_OPTION(channel_max, "Maximum generator channels in any layer");
  SG2_OPTION(architecture, "Synthesis network architecture");
  SG2_OPTION(conv_clamp, "Clamp generator activations to +-X (< 0 or null: off)").none_is(-1.0);
  SG2_OPTION(use_noise, "Per-pixel noise inputs in the synthesis layers");
  SG2_OPTION(resample_filter, "FIR taps of the up- and downsampling filters");
  return s;
}

config::Schema<DiscriminatorOptions> make_discriminator_schema() {
  using Options = DiscriminatorOptions;
  config::Schema<Options> s;
  SG2_OPTION(c_dim, "Conditioning label (C) dimensionality (0: unconditional)");
  SG2_OPTION(img_resolution, "Input resolution");
  SG2_OPTION(img_channels, "Input channels");
  SG2_OPTION(architecture, "Discriminator architecture");
  SG2_OPTION(channel_base, "Discriminator channels at resolution r: min(channel_base / r, channel_max)");
  SG2_OPTION(channel_max, "Maximum discriminator channels in any layer");
  SG2_OPTION(mbstd_group_size, "Minibatch standard deviation group size (0 or null: the whole per-round batch)")
      .none_is(0);
  SG2_OPTION(mbstd_num_channels, "Minibatch standard deviation features (0: off)");
  SG2_OPTION(cmap_dim, "Dimensionality of the label embedding of a conditional D (null: the channels at 4x4)")
      .none_is(-1);
  SG2_OPTION(mapping_layers, "Layers of the label mapping of a conditional discriminator");
  SG2_OPTION(mapping_lr_multiplier, "Learning rate multiplier of the label mapping");
  SG2_OPTION(conv_clamp, "Clamp discriminator activations to +-X (< 0 or null: off)").none_is(-1.0);
  SG2_OPTION(resample_filter, "FIR taps of the downsampling filters");
  return s;
}

#undef SG2_OPTION

}  // namespace

const config::Schema<GeneratorOptions>& generator_schema() {
  static const config::Schema<GeneratorOptions> schema = make_generator_schema();
  return schema;
}

const config::Schema<DiscriminatorOptions>& discriminator_schema() {
  static const config::Schema<DiscriminatorOptions> schema = make_discriminator_schema();
  return schema;
}

const std::vector<std::string>& dataset_given_keys() {
  static const std::vector<std::string> keys{"c_dim", "img_resolution", "img_channels"};
  return keys;
}

}  // namespace sg2::nn
