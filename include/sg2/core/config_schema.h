#pragma once
// One definition per config field: its dotted key, type, default and one-line help. The YAML reader
// (nested maps), the YAML writer (the resolved config), the CLI flags (--G.z_dim 512, see
// config_cli.h), --help and the JSON form (config_json.h: the networks' options in snapshots and
// fixtures) are all made from it, so none of them can drift from the others.
//
//   Schema<TrainConfig> s;
//   s.add("loss.r1_gamma", [](TrainConfig& c) -> auto& { return c.loss.r1_gamma; }, "R1 weight");
//   s.include("G.", generator_schema(), [](TrainConfig& c) -> auto& { return c.G; });  // a part's schema
//
// Defaults are whatever a default-constructed Config holds. Unknown keys and wrong types are errors
// that name the key and where it came from (file or command line).

#include "sg2/core/enum_names.h"
#include "sg2/core/error.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace sg2::config {

// An integer, or the word "auto" (e.g. train.batch_gpu: the program decides at run time).
struct IntOrAuto {
  IntOrAuto() = default;
  IntOrAuto(int64_t v, bool is_auto = false) : value(v), automatic(is_auto) {}  // NOLINT: an integer is one
  int64_t value = 0;
  bool automatic = false;
};

// Conversions between YAML nodes and field types; `where` names the key and its source in errors.
int64_t decode_integer(const YAML::Node& node, const std::string& where);
int decode_int32(const YAML::Node& node, const std::string& where);  // out of int's range: an error
IntOrAuto decode_integer_or_auto(const YAML::Node& node, const std::string& where);
double decode_number(const YAML::Node& node, const std::string& where);
bool decode_bool(const YAML::Node& node, const std::string& where);
std::string decode_string(const YAML::Node& node, const std::string& where);
std::vector<std::string> decode_string_list(const YAML::Node& node, const std::string& where);
std::vector<float> decode_number_list(const YAML::Node& node, const std::string& where);

// Field values as YAML nodes; floats in their shortest round-trip form ("0.002", not 0.00200000000000000004).
// An enum field is written by name: `enum_names(Enum{})`, declared beside the enum (found by
// argument-dependent lookup), returns its EnumNames table.
YAML::Node encode_value(double value);
YAML::Node encode_value(const IntOrAuto& value);
YAML::Node encode_value(const std::vector<float>& values);
template <class T>
YAML::Node encode_value(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return YAML::Node(std::string(enum_name(enum_names(value), value)));
  } else {
    return YAML::Node(value);
  }
}

template <class T, class = void>
struct Codec;
// An enum, read by the names of its table (a name outside it never reaches here: the field's
// choices, its table's names, are checked first, in an error naming the key and the allowed names).
template <class T>
struct Codec<T, std::enable_if_t<std::is_enum_v<T>>> {
  static constexpr const char* type_name = "TEXT";
  static T decode(const YAML::Node& n, const std::string& w) {
    return parse_enum(enum_names(T{}), decode_string(n, w), w.c_str());
  }
};
template <>
struct Codec<int> {
  static constexpr const char* type_name = "INT";
  static int decode(const YAML::Node& n, const std::string& w) { return decode_int32(n, w); }
};
template <>
struct Codec<int64_t> {
  static constexpr const char* type_name = "INT";
  static int64_t decode(const YAML::Node& n, const std::string& w) { return decode_integer(n, w); }
};
template <>
struct Codec<IntOrAuto> {
  static constexpr const char* type_name = "INT|auto";
  static IntOrAuto decode(const YAML::Node& n, const std::string& w) { return decode_integer_or_auto(n, w); }
};
template <>
struct Codec<double> {
  static constexpr const char* type_name = "FLOAT";
  static double decode(const YAML::Node& n, const std::string& w) { return decode_number(n, w); }
};
template <>
struct Codec<bool> {
  static constexpr const char* type_name = "BOOL";
  static bool decode(const YAML::Node& n, const std::string& w) { return decode_bool(n, w); }
};
template <>
struct Codec<std::string> {
  static constexpr const char* type_name = "TEXT";
  static std::string decode(const YAML::Node& n, const std::string& w) { return decode_string(n, w); }
};
template <>
struct Codec<std::vector<std::string>> {
  static constexpr const char* type_name = "LIST";
  static std::vector<std::string> decode(const YAML::Node& n, const std::string& w) {
    return decode_string_list(n, w);
  }
};

template <>
struct Codec<std::vector<float>> {
  static constexpr const char* type_name = "FLOATS";
  static std::vector<float> decode(const YAML::Node& n, const std::string& w) { return decode_number_list(n, w); }
};

// Splits nested maps into (dotted key, leaf node) pairs in document order.
std::vector<std::pair<std::string, YAML::Node>> flatten_yaml(const YAML::Node& root);
// Builds nested maps from (dotted key, leaf node) pairs.
YAML::Node nest_yaml(const std::vector<std::pair<std::string, YAML::Node>>& entries);
// "unknown key 'G.zdim' in FILE; did you mean 'G.z_dim'?"
[[noreturn]] void fail_unknown_key(const std::string& key, const std::string& source,
                                   const std::vector<std::string>& known_keys);
// Says that a config (a file, a snapshot's) gives a retired key, which is ignored, and why.
void warn_retired_key(const std::string& key, const std::string& source, const std::string& note);
// "key 'G.z_dim' (configs/x.yaml)": how errors name a field and where its value came from.
std::string describe_key(const std::string& key, const std::string& source);
// Throws unless `value` is one of `allowed`, listing them.
void check_choice(const std::string& value, const std::vector<std::string>& allowed, const std::string& where);
// A value on one line, in YAML flow style ("[1, 3, 3, 1]").
std::string flow_text(const YAML::Node& value);
// Loads a YAML file with an error naming the file and the line on syntax errors.
YAML::Node load_yaml_file(const std::string& path);

template <class Config>
class Schema {
 public:
  struct Field {
    std::string key;
    std::string help;
    std::string type_name;
    std::vector<std::string> choices;  // allowed values of a TEXT field; empty = any
    YAML::Node none_value;             // what null (the reference's None) stands for; undefined: null is no value
    // `where` is describe_key(key, source), for errors.
    std::function<void(Config&, const YAML::Node&, const std::string& where)> read;
    std::function<YAML::Node(const Config&)> write;

    Field& one_of(std::vector<std::string> allowed) {
      choices = std::move(allowed);
      return *this;
    }
    // null reads as `value`, and `value` is written to JSON as null (e.g. conv_clamp: None = -1).
    template <class V>
    Field& none_is(V value) {
      none_value = encode_value(value);
      return *this;
    }
    bool has_none() const { return none_value.IsDefined() && !none_value.IsNull(); }
  };

  // Access: a callable Config& -> T& for T in {int, int64_t, double, bool, string, vector<string>}.
  template <class Access>
  Field& add(std::string key, Access access, std::string help) {
    using T = std::decay_t<decltype(access(std::declval<Config&>()))>;
    Field field;
    field.key = key;
    field.help = std::move(help);
    field.type_name = Codec<T>::type_name;
    if constexpr (std::is_enum_v<T>) {
      for (const auto& [value, name] : enum_names(T{})) field.choices.push_back(name);
    }
    field.read = [access](Config& config, const YAML::Node& node, const std::string& where) {
      access(config) = Codec<T>::decode(node, where);
    };
    field.write = [access](const Config& config) { return encode_value(access(const_cast<Config&>(config))); };
    fields_.push_back(std::move(field));
    return fields_.back();
  }

  // Adds the fields of a part's schema under `prefix`, except the keys in `except`; access is a
  // callable Config& -> Part&.
  template <class Part, class Access>
  void include(const std::string& prefix, const Schema<Part>& part, Access access,
               const std::vector<std::string>& except = {}) {
    for (const auto& part_field : part.fields()) {
      if (std::find(except.begin(), except.end(), part_field.key) != except.end()) continue;
      Field field;
      field.key = prefix + part_field.key;
      field.help = part_field.help;
      field.type_name = part_field.type_name;
      field.choices = part_field.choices;
      field.none_value = part_field.none_value;
      field.read = [read = part_field.read, access](Config& config, const YAML::Node& node, const std::string& where) {
        read(access(config), node, where);
      };
      field.write = [write = part_field.write, access](const Config& config) {
        return write(access(const_cast<Config&>(config)));
      };
      fields_.push_back(std::move(field));
    }
  }

  const std::vector<Field>& fields() const { return fields_; }

  // A key that configs no longer set (a snapshot's config may still hold it): read files and
  // snapshots ignore it with a warning that says `note`; the command line rejects it (its flag is gone).
  void retire(std::string key, std::string note) { retired_.emplace_back(std::move(key), std::move(note)); }

  // Why `key` was retired; nullptr for a key that was not.
  const std::string* retired_note(const std::string& key) const {
    for (const auto& [retired, note] : retired_) {
      if (retired == key) return &note;
    }
    return nullptr;
  }

  const Field* find(const std::string& key) const {
    for (const auto& f : fields_) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& f : fields_) out.push_back(f.key);
    return out;
  }

  // Applies every key of a (nested) YAML document; `source` names it in errors.
  void read_yaml(Config& config, const YAML::Node& root, const std::string& source) const {
    if (!root || root.IsNull()) return;
    SG2_CHECK(root.IsMap(), "{}: the top level must be a map of keys, got a {}", source,
              root.IsSequence() ? "list" : "scalar");
    std::vector<std::pair<std::string, YAML::Node>> entries;
    try {
      entries = flatten_yaml(root);
    } catch (const Error& e) {
      SG2_FAIL("{}: {}", source, without_location(e.what()));
    }
    std::vector<std::string> seen;  // YAML itself keeps the last of two equal keys without a word
    for (const auto& [key, node] : entries) {
      SG2_CHECK(std::find(seen.begin(), seen.end(), key) == seen.end(), "{}: key '{}' is given twice", source, key);
      seen.push_back(key);
      set(config, key, node, source);
    }
  }

  void read_yaml_file(Config& config, const std::string& path) const {
    read_yaml(config, load_yaml_file(path), path);
  }

  // Sets one field from a YAML node (a parsed scalar or list); unknown keys are errors.
  void set(Config& config, const std::string& key, const YAML::Node& node, const std::string& source) const {
    if (const std::string* note = retired_note(key)) return warn_retired_key(key, source, *note);
    const Field* field = find(key);
    if (field == nullptr) fail_unknown_key(key, source, keys());
    const std::string where = describe_key(key, source);
    const YAML::Node& value = node.IsNull() && field->has_none() ? field->none_value : node;
    if (!field->choices.empty()) check_choice(decode_string(value, where), field->choices, where);
    field->read(config, value, where);
  }

  YAML::Node to_yaml(const Config& config) const {
    std::vector<std::pair<std::string, YAML::Node>> entries;
    for (const auto& f : fields_) entries.emplace_back(f.key, f.write(config));
    return nest_yaml(entries);
  }

  // One "key: value" line per field, in schema order (values in YAML flow style).
  std::vector<std::string> to_key_value_lines(const Config& config) const {
    std::vector<std::string> lines;
    for (const auto& f : fields_) lines.push_back(f.key + ": " + flow_text(f.write(config)));
    return lines;
  }

  std::string to_yaml_string(const Config& config) const {
    YAML::Emitter out;
    out << to_yaml(config);
    return std::string(out.c_str()) + "\n";
  }

  Config from_yaml_string(const std::string& text, const std::string& source) const {
    Config config;
    read_yaml(config, YAML::Load(text), source);
    return config;
  }

 private:
  std::vector<Field> fields_;
  std::vector<std::pair<std::string, std::string>> retired_;  // key, note
};

}  // namespace sg2::config
