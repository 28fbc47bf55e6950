#include "sg2/core/config_cli.h"

namespace sg2::config {

YAML::Node parse_cli_value(const std::string& text) {
  try {
    YAML::Node node = YAML::Load(text);
    if (node.IsScalar() || node.IsSequence()) return node;
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
