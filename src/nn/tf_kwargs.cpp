#include "tf_kwargs.h"

#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"

#include <cmath>
#include <set>

namespace sg2::nn {

using pickle::Value;

namespace {

// A whole number as an int (as the TensorFlow code's arguments are), otherwise a float.
Value number(double x) {
  return std::floor(x) == x && std::abs(x) < 1e15 ? Value::integer(static_cast<int64_t>(x)) : Value::real(x);
}

Value filter_list(const std::vector<float>& taps) {
  pickle::Items items;
  for (const float t : taps) items.push_back(number(t));
  return Value::list(std::move(items));
}

Value none_if_negative(double x) { return x < 0 ? Value() : number(x); }

pickle::DictItems::value_type entry(const char* key, Value value) { return {Value::string(key), std::move(value)}; }

// Reads one network's static_kwargs; every key read or ignored is known, any other is an error.
class TfKwargs {
 public:
  TfKwargs(const Value& network_state, const std::string& what) : what_(what + ": static_kwargs") {
    if (const Value* k = network_state.find("static_kwargs"); k != nullptr) {
      for (const auto& [key, value] : k->as_dict(what_)) entries_[key.as_string(what_ + "' keys")] = value;
    }
  }

  // The argument: nullptr where absent or None.
  const Value* get(const std::string& key) {
    known_.insert(key);
    const auto it = entries_.find(key);
    return it == entries_.end() || it->second.is_none() ? nullptr : &it->second;
  }
  bool is_none(const std::string& key) {
    known_.insert(key);
    return entries_.count(key) && entries_.at(key).is_none();
  }
  std::string name(const std::string& key) const { return what_ + "." + key; }

  int64_t integer(const std::string& key, int64_t fallback) {
    const Value* v = get(key);
    return v ? v->as_int(name(key)) : fallback;
  }
  double real(const std::string& key, double fallback) {
    const Value* v = get(key);
    return v ? v->as_number(name(key)) : fallback;
  }
  std::string text(const std::string& key, const std::string& fallback) {
    const Value* v = get(key);
    return v ? v->as_string(name(key)) : fallback;
  }
  bool flag(const std::string& key, bool fallback) {
    const Value* v = get(key);
    return v ? v->as_bool(name(key)) : fallback;
  }
  std::vector<float> filter(const std::string& key) {
    if (is_none(key)) return {1};  // None: no filtering, as the reference's setup_filter(None)
    const Value* v = get(key);
    if (v == nullptr) return {1, 3, 3, 1};
    std::vector<float> taps;
    for (const Value& t : v->as_sequence(name(key))) taps.push_back(static_cast<float>(t.as_number(name(key))));
    return taps;
  }
  // Arguments whose other values the networks here do not build.
  void require_text(const std::string& key, const std::string& supported) {
    const std::string value = text(key, supported);
    SG2_CHECK(value == supported, "{} is '{}'; only '{}' is supported", name(key), value, supported);
  }
  void require_width(const std::string& key, int64_t width, const char* width_name) {
    const int64_t value = integer(key, width);
    SG2_CHECK(value == width, "{} is {}; only the {} ({}) is supported", name(key), value, width_name, width);
  }
  void ignore(std::initializer_list<const char*> keys) { known_.insert(keys.begin(), keys.end()); }

  void check_all_known() const {
    for (const auto& [key, value] : entries_) {
      SG2_CHECK(known_.count(key), "{}: unknown TensorFlow argument '{}' (as legacy.load_network_pkl, which refuses "
                "it too)", what_, key);
    }
  }

 private:
  std::string what_;
  std::map<std::string, Value> entries_;
  std::set<std::string> known_;
};

Architecture architecture(TfKwargs& k, const char* fallback) {
  return parse_enum(kArchitectureNames, k.text("architecture", fallback), k.name("architecture").c_str());
}

}  // namespace

Value generator_tf_kwargs(const GeneratorOptions& g, int64_t num_fp16_res) {
  SG2_CHECK(g.w_avg_beta >= 0, "G.w_avg_beta {} (no w_avg): a TensorFlow-form pickle always has dlatent_avg",
            g.w_avg_beta);
  SG2_CHECK(g.channel_base % 2 == 0, "G.channel_base {} is odd: the TensorFlow form stores its half (fmap_base)",
            g.channel_base);
  return Value::dict({
      entry("latent_size", Value::integer(g.z_dim)), entry("label_size", Value::integer(g.c_dim)),
      entry("dlatent_size", Value::integer(g.w_dim)), entry("resolution", Value::integer(g.img_resolution)),
      entry("num_channels", Value::integer(g.img_channels)), entry("mapping_layers", Value::integer(g.mapping_layers)),
      entry("mapping_fmaps", Value::integer(g.w_dim)), entry("mapping_nonlinearity", Value::string("lrelu")),
      entry("mapping_lrmul", number(g.mapping_lr_multiplier)), entry("w_avg_beta", number(g.w_avg_beta)),
      entry("fmap_base", Value::integer(g.channel_base / 2)), entry("fmap_max", Value::integer(g.channel_max)),
      entry("num_fp16_res", Value::integer(num_fp16_res)), entry("conv_clamp", none_if_negative(g.conv_clamp)),
      entry("architecture", Value::string(name_of(g.architecture))),
      entry("resample_kernel", filter_list(g.resample_filter)), entry("use_noise", Value::boolean(g.use_noise)),
      entry("nonlinearity", Value::string("lrelu")),
  });
}

Value discriminator_tf_kwargs(const DiscriminatorOptions& d, int64_t num_fp16_res) {
  SG2_CHECK(d.channel_base % 2 == 0, "D.channel_base {} is odd: the TensorFlow form stores its half (fmap_base)",
            d.channel_base);
  return Value::dict({
      entry("label_size", Value::integer(d.c_dim)), entry("resolution", Value::integer(d.img_resolution)),
      entry("num_channels", Value::integer(d.img_channels)),
      entry("architecture", Value::string(name_of(d.architecture))),
      entry("fmap_base", Value::integer(d.channel_base / 2)), entry("fmap_max", Value::integer(d.channel_max)),
      entry("num_fp16_res", Value::integer(num_fp16_res)), entry("conv_clamp", none_if_negative(d.conv_clamp)),
      entry("mapping_fmaps", d.cmap_dim < 0 ? Value() : Value::integer(d.cmap_dim)),
      entry("nonlinearity", Value::string("lrelu")), entry("resample_kernel", filter_list(d.resample_filter)),
      entry("mapping_layers", Value::integer(d.mapping_layers)),
      entry("mapping_lrmul", number(d.mapping_lr_multiplier)),
      entry("mbstd_group_size", d.mbstd_group_size <= 0 ? Value() : Value::integer(d.mbstd_group_size)),
      entry("mbstd_num_features", Value::integer(d.mbstd_num_channels)),
  });
}

GeneratorOptions generator_options_from_tf(const Value& network_state, const std::string& what,
                                           int64_t* num_fp16_res, std::vector<std::string>* /*notes*/) {
  TfKwargs k(network_state, what);
  GeneratorOptions g;
  g.z_dim = k.integer("latent_size", 512);
  g.c_dim = k.integer("label_size", 0);
  g.w_dim = k.integer("dlatent_size", 512);
  g.img_resolution = k.integer("resolution", 1024);
  g.img_channels = k.integer("num_channels", 3);
  g.mapping_layers = k.integer("mapping_layers", 8);
  k.require_width("mapping_fmaps", g.w_dim, "dlatent_size");
  k.require_width("label_fmaps", g.w_dim, "dlatent_size");
  k.require_text("mapping_nonlinearity", "lrelu");
  g.mapping_lr_multiplier = k.real("mapping_lrmul", 0.01);
  g.w_avg_beta = k.is_none("w_avg_beta") ? 1.0 : k.real("w_avg_beta", 0.995);  // None: w_avg kept as it is
  g.channel_base = k.integer("fmap_base", 16384) * 2;
  g.channel_max = k.integer("fmap_max", 512);
  const int64_t fp16 = k.integer("num_fp16_res", 0);
  g.conv_clamp = k.real("conv_clamp", -1);
  g.architecture = architecture(k, "skip");
  g.resample_filter = k.filter("resample_kernel");
  g.use_noise = k.flag("use_noise", true);
  k.require_text("nonlinearity", "lrelu");
  k.ignore({"truncation_psi", "truncation_cutoff", "style_mixing_prob", "structure"});  // sampling, training
  k.check_all_known();
  validate(g);
  if (num_fp16_res != nullptr) *num_fp16_res = fp16;
  return g;
}

DiscriminatorOptions discriminator_options_from_tf(const Value& network_state, const std::string& what,
                                                   int64_t* num_fp16_res, std::vector<std::string>* notes) {
  TfKwargs k(network_state, what);
  DiscriminatorOptions d;
  d.c_dim = k.integer("label_size", 0);
  d.img_resolution = k.integer("resolution", 1024);
  d.img_channels = k.integer("num_channels", 3);
  d.architecture = architecture(k, "resnet");
  d.channel_base = k.integer("fmap_base", 16384) * 2;
  d.channel_max = k.integer("fmap_max", 512);
  const int64_t fp16 = k.integer("num_fp16_res", 0);
  d.conv_clamp = k.real("conv_clamp", -1);
  d.cmap_dim = k.integer("mapping_fmaps", -1);
  k.require_text("nonlinearity", "lrelu");
  d.resample_filter = k.filter("resample_kernel");
  if (const int64_t frozen = k.integer("freeze_layers", 0); frozen != 0 && notes != nullptr) {
    notes->push_back(fmt::format("{}: freeze_layers {} is a training setting (D.freeze_layers): not kept", what, frozen));
  }
  d.mapping_layers = k.integer("mapping_layers", 0);  // 0: the label embedding alone (TensorFlow's D default)
  d.mapping_lr_multiplier = k.real("mapping_lrmul", 0.1);
  d.mbstd_group_size = k.integer("mbstd_group_size", 0);  // None: the whole minibatch
  d.mbstd_num_channels = k.integer("mbstd_num_features", 1);
  k.ignore({"structure"});
  k.check_all_known();
  validate(d);
  if (num_fp16_res != nullptr) *num_fp16_res = fp16;
  return d;
}

}  // namespace sg2::nn
