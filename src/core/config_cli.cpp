#include "sg2/core/config_cli.h"

namespace sg2::config {

YAML::Node parse_cli_value(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t"), last = text.find_last_not_of(" \t");
  const std::string trimmed = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  const bool quoted = !trimmed.empty() && (trimmed.front() == '"' || trimmed.front() == '\'');
  try {
    YAML::Node node = YAML::Load(text);
    if (node.IsSequence() || (node.IsNull() && !trimmed.empty())) return node;
    // A scalar as written or quoted; YAML's reading of "exp #3" (a comment), "&a b" (an anchor) or
    // "|" (a block) would drop what the user typed.
    if (node.IsScalar() && (quoted || node.Scalar() == trimmed)) return node;
  } catch (const YAML::Exception&) {
  }
  return YAML::Node(text);
}

std::string cli_group(const std::string& key) {
  const auto dot = key.find('.');
  return "Config " + (dot == std::string::npos ? key : key.substr(0, dot) + ".*");
}

bool cli_has(const CliValues& values, const std::string& key) {
  for (const auto& b : values.bindings) {
    if (b.key == key && b.option->count() > 0) return true;
  }
  return false;
}

}  // namespace sg2::config
