#include "sg2/core/config_schema.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace sg2::config {

namespace {

std::string node_text(const YAML::Node& node) {
  if (!node || node.IsNull()) return "nothing";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  return node.IsSequence() ? "a list" : "a map";
}

[[noreturn]] void fail_type(const YAML::Node& node, const std::string& where, const char* expected) {
  throw Error(fmt::format("{}: expected {}, got {}", where, expected, node_text(node)));
}

// Config keys are a few levels deep; deeper nesting is a mistake, or an alias that contains itself
// ("a: &x {b: *x}"), which would recurse forever.
constexpr int kMaxNesting = 16;

void flatten_into(const YAML::Node& node, const std::string& prefix,
                  std::vector<std::pair<std::string, YAML::Node>>& out, int depth) {
  if (node.IsMap()) {
    SG2_CHECK(depth < kMaxNesting, "'{}': maps nested more than {} levels deep (an alias that refers to itself?)",
              prefix.substr(0, 200), kMaxNesting);
    for (const auto& item : node) {
      const std::string name = item.first.as<std::string>();
      flatten_into(item.second, prefix.empty() ? name : prefix + "." + name, out, depth + 1);
    }
    return;
  }
  out.emplace_back(prefix, node);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

YAML::Node encode_value(double value) { return YAML::Node(fmt::format("{}", value)); }

namespace {
// node.as<T>() with an error naming the key and what was expected.
template <class T>
T decode_scalar(const YAML::Node& node, const std::string& where, const char* expected) {
  if (!node.IsScalar()) fail_type(node, where, expected);
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    fail_type(node, where, expected);
  }
}
}  // namespace

int64_t decode_integer(const YAML::Node& node, const std::string& where) {
  return decode_scalar<int64_t>(node, where, "an integer");
}

int decode_int32(const YAML::Node& node, const std::string& where) {
  return decode_scalar<int>(node, where, "an integer from -2147483648 to 2147483647");
}

IntOrAuto decode_integer_or_auto(const YAML::Node& node, const std::string& where) {
  if (node.IsScalar() && node.Scalar() == "auto") return {0, true};
  return {decode_scalar<int64_t>(node, where, "an integer or auto"), false};
}

YAML::Node encode_value(const IntOrAuto& value) {
  return value.automatic ? YAML::Node("auto") : YAML::Node(value.value);
}

// Finite: YAML's .inf and .nan would pass as numbers and then stand for nothing a key can mean.
double decode_number(const YAML::Node& node, const std::string& where) {
  const auto value = decode_scalar<double>(node, where, "a finite number");
  if (!std::isfinite(value)) fail_type(node, where, "a finite number");
  return value;
}

bool decode_bool(const YAML::Node& node, const std::string& where) {
  return decode_scalar<bool>(node, where, "true or false");
}

std::string decode_string(const YAML::Node& node, const std::string& where) {
  if (node.IsNull()) return "";
  if (!node.IsScalar()) fail_type(node, where, "a text value");
  return node.Scalar();
}

std::vector<std::string> decode_string_list(const YAML::Node& node, const std::string& where) {
  std::vector<std::string> values;
  if (node.IsNull()) return values;
  if (node.IsScalar()) {  // "a,b" from the command line
    std::stringstream stream(node.Scalar());
    for (std::string item; std::getline(stream, item, ',');) {
      if (!item.empty()) values.push_back(item);
    }
    return values;
  }
  if (!node.IsSequence()) fail_type(node, where, "a list");
  for (const auto& item : node) values.push_back(decode_string(item, where));
  return values;
}

std::vector<float> decode_number_list(const YAML::Node& node, const std::string& where) {
  std::vector<float> values;
  if (node.IsNull()) return values;
  if (!node.IsSequence()) fail_type(node, where, "a list of numbers");
  for (const auto& item : node) {
    const auto value = static_cast<float>(decode_number(item, where));
    if (!std::isfinite(value)) fail_type(item, where, "a list of numbers within float32's range");
    values.push_back(value);
  }
  return values;
}

YAML::Node encode_value(const std::vector<float>& values) {
  YAML::Node list(YAML::NodeType::Sequence);
  for (float v : values) list.push_back(encode_value(static_cast<double>(v)));
  list.SetStyle(YAML::EmitterStyle::Flow);  // taps read best on one line: [1, 3, 3, 1]
  return list;
}

std::vector<std::pair<std::string, YAML::Node>> flatten_yaml(const YAML::Node& root) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  flatten_into(root, "", out, 0);
  return out;
}

YAML::Node nest_yaml(const std::vector<std::pair<std::string, YAML::Node>>& entries) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& [key, value] : entries) {
    std::vector<std::string> parts;
    std::stringstream stream(key);
    for (std::string part; std::getline(stream, part, '.');) parts.push_back(part);
    // Walk down with fresh handles: yaml-cpp nodes are references, so reassigning one would
    // overwrite the map it points to.
    std::vector<YAML::Node> path{root};
    for (size_t i = 0; i + 1 < parts.size(); ++i) path.push_back(path.back()[parts[i]]);
    path.back()[parts.back()] = value;
  }
  return root;
}

void warn_retired_key(const std::string& key, const std::string& source, const std::string& note) {
  spdlog::warn("{}: key '{}' is retired and ignored ({})", source, key, note);
}

std::string describe_key(const std::string& key, const std::string& source) {
  return "key '" + key + "' (" + source + ")";
}

void check_choice(const std::string& value, const std::vector<std::string>& allowed, const std::string& where) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  throw Error(fmt::format("{}: '{}' is not one of: {}", where, value, list));
}

void fail_unknown_key(const std::string& key, const std::string& source, const std::vector<std::string>& known_keys) {
  std::vector<std::string> members;  // a section given a value ("train: 5") has keys below it
  for (const auto& k : known_keys) {
    if (k.rfind(key + ".", 0) == 0) members.push_back(k);
  }
  if (!members.empty()) {
    throw Error(fmt::format("{}: '{}' is a section ({}{}), not a value: give it as a mapping of its keys, e.g. "
                            "'{}: {{{}: ...}}'", source, key, members.front(), members.size() > 1 ? ", ..." : "",
                            key, members.front().substr(key.size() + 1)));
  }
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& k : known_keys) {
    const size_t d = edit_distance(key, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  std::string hint = best_distance <= std::max<size_t>(3, key.size() / 3) ? fmt::format("; did you mean '{}'?", best)
                                                                         : "; run with --help for the list of keys";
  throw Error(fmt::format("{}: unknown key '{}'{}", source, key, hint));
}

std::string flow_text(const YAML::Node& value) {
  YAML::Emitter out;
  out << YAML::Flow << value;
  return out.c_str();
}

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw Error(fmt::format("cannot open config file '{}'", path));
  try {
    return YAML::Load(file);
  } catch (const YAML::ParserException& e) {
    throw Error(fmt::format("{}:{}:{}: YAML syntax error: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

}  // namespace sg2::config
