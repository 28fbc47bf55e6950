#pragma once
// Construction options of the networks, named as the reference's constructor arguments. Each
// network's keys are defined once, in its schema: the JSON form ({"z_dim": 512, "mapping_layers": 8,
// ...}) the parity fixtures use and snapshots store, and the G.* / D.* keys of the training config
// (train/config.h), are both made from it.

#include "sg2/core/config_schema.h"
#include "sg2/ops/activation.h"

#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace sg2::nn {

enum class Architecture { Orig, Skip, Resnet };
inline constexpr EnumNames<Architecture, 3> kArchitectureNames{
    {{Architecture::Orig, "orig"}, {Architecture::Skip, "skip"}, {Architecture::Resnet, "resnet"}}};
constexpr const auto& enum_names(Architecture) { return kArchitectureNames; }  // by name: name_of, config fields

enum class NoiseMode { Random, Const, None };

// Which blocks keep their activations channels_last (NHWC in memory), the layout of the tensor
// cores' convolutions: none (the reference's default), those in the reduced type (the reference's
// fp16_channels_last), or all of them. The weights follow their input (ops::weight_for); the
// images, the mapping and D's epilogue stay contiguous.
enum class ChannelsLast { Off, Reduced, All };
inline constexpr EnumNames<ChannelsLast, 3> kChannelsLastNames{
    {{ChannelsLast::Off, "off"}, {ChannelsLast::Reduced, "reduced"}, {ChannelsLast::All, "all"}}};
constexpr const auto& enum_names(ChannelsLast) { return kChannelsLastNames; }

// Mixed precision as the reference: the blocks at the num_fp16_res highest resolutions (never below
// 8x8) compute in a reduced type (float16, or bfloat16), the others and the mapping in float32;
// parameters and gradients stay float32. 0 keeps everything float32 (the parity path).
struct MixedPrecision {
  int64_t num_fp16_res = 0;
  at::ScalarType reduced_type = at::kHalf;  // kHalf or kBFloat16
  ChannelsLast channels_last = ChannelsLast::Off;

  // The lowest resolution that computes in the reduced type (0: none), as the reference's
  // fp16_resolution = max(2 ** (log2(img_resolution) + 1 - num_fp16_res), 8).
  int64_t lowest_reduced_resolution(int64_t img_resolution) const;
  // The type a block at `resolution` of a network of `img_resolution` computes in.
  at::ScalarType block_type(int64_t resolution, int64_t img_resolution) const;
  // The layout of a block's activations when it computes in `type` (force_fp32 included).
  at::MemoryFormat block_memory_format(at::ScalarType type) const;
  // "float32", or e.g. "float16 from 32x32 up, float32 below", and ", channels_last ..." when set.
  std::string describe(int64_t img_resolution) const;
  // Why network `net`'s float16 blocks may overflow: they run with no activation clamp (conv_clamp
  // < 0), which the reference never does (its num_fp16_res comes with conv_clamp 256). "" when
  // nothing runs in float16 or a clamp is set; bfloat16 has float32's range.
  std::string overflow_warning(const char* net, int64_t img_resolution, double conv_clamp) const;
};
NoiseMode parse_noise_mode(const std::string& name);
std::string to_string(NoiseMode mode);

struct MappingOptions {
  int64_t z_dim = 512;
  int64_t c_dim = 0;
  int64_t w_dim = 512;
  int64_t num_ws = 0;            // 0: do not broadcast (output [N, w_dim])
  int64_t num_layers = 8;
  int64_t embed_features = -1;   // -1: w_dim
  int64_t layer_features = -1;   // -1: w_dim
  ops::Activation activation = ops::Activation::LRelu;
  double lr_multiplier = 0.01;
  double w_avg_beta = 0.995;     // < 0: do not track w_avg (no buffer)
};

struct GeneratorOptions {
  int64_t z_dim = 512;
  int64_t c_dim = 0;
  int64_t w_dim = 512;
  int64_t img_resolution = 256;
  int64_t img_channels = 3;
  int64_t mapping_layers = 8;
  double mapping_lr_multiplier = 0.01;
  double w_avg_beta = 0.995;
  int64_t channel_base = 32768;
  int64_t channel_max = 512;
  Architecture architecture = Architecture::Skip;
  double conv_clamp = -1;        // < 0: no clamping
  bool use_noise = true;
  MixedPrecision precision;
  std::vector<float> resample_filter{1, 3, 3, 1};

  int64_t channels_at(int64_t resolution) const;  // min(channel_base / res, channel_max)
};

struct DiscriminatorOptions {
  int64_t c_dim = 0;
  int64_t img_resolution = 256;
  int64_t img_channels = 3;
  Architecture architecture = Architecture::Resnet;
  int64_t channel_base = 32768;
  int64_t channel_max = 512;
  int64_t mbstd_group_size = 4;  // <= 0: whole minibatch
  int64_t mbstd_num_channels = 1;
  int64_t cmap_dim = -1;         // -1: channels at 4x4
  int64_t mapping_layers = 8;    // label mapping of a conditional D
  double mapping_lr_multiplier = 0.01;
  double conv_clamp = -1;
  std::vector<float> resample_filter{1, 3, 3, 1};
  MixedPrecision precision;

  int64_t channels_at(int64_t resolution) const;
};

// What runs in each network: "G <MixedPrecision::describe>, conv_clamp <value or off>; D ..." (the
// training log's and the bench's precision line).
std::string describe_precision(const GeneratorOptions& g, const DiscriminatorOptions& d);

// Checks a configuration the networks can be built from; errors name the field.
void validate(const GeneratorOptions& g);
void validate(const DiscriminatorOptions& d);
// The checks of the options a config sets itself (not those the dataset gives: resolution,
// channels, labels), so that a config is refused before any dataset is opened.
void validate_own_options(const GeneratorOptions& g);
void validate_own_options(const DiscriminatorOptions& d);

// The constructor arguments as config fields (key, type, default, help; None as the reference).
// Precision is not among them: it does not change the parameters, and each run chooses its own.
const config::Schema<GeneratorOptions>& generator_schema();
const config::Schema<DiscriminatorOptions>& discriminator_schema();
// The keys a dataset gives rather than a config (c_dim, img_resolution, img_channels).
const std::vector<std::string>& dataset_given_keys();

// JSON in the fixture / snapshot form, made from the schemas. Unknown keys are reported through
// `unknown_keys` ("G.key") and otherwise ignored, as is the reference's num_fp16_res.
GeneratorOptions generator_options_from_json(const nlohmann::json& j, std::vector<std::string>* unknown_keys = nullptr);
DiscriminatorOptions discriminator_options_from_json(const nlohmann::json& j,
                                                     std::vector<std::string>* unknown_keys = nullptr);
nlohmann::json to_json(const GeneratorOptions& g);
nlohmann::json to_json(const DiscriminatorOptions& d);

}  // namespace sg2::nn
