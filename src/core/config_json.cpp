#include "sg2/core/config_json.h"

namespace sg2::config {

nlohmann::json json_from_node(const YAML::Node& node, const std::string& type_name) {
  const std::string where = "the JSON value of a " + type_name + " field";
  if (!node || node.IsNull()) return nullptr;
  if (type_name == "INT") return decode_integer(node, where);
  if (type_name == "FLOAT") return decode_number(node, where);
  if (type_name == "BOOL") return decode_bool(node, where);
  if (type_name == "FLOATS") return decode_number_list(node, where);
  if (type_name == "LIST") return decode_string_list(node, where);
  if (type_name == "INT|auto") {
    const IntOrAuto value = decode_integer_or_auto(node, where);
    return value.automatic ? nlohmann::json("auto") : nlohmann::json(value.value);
  }
  return decode_string(node, where);
}

std::vector<std::pair<std::string, YAML::Node>> json_object_entries(const nlohmann::json& object,
                                                                   const std::string& source) {
  if (!object.is_object()) throw Error(fmt::format("{}: expected a JSON object, got {}", source, object.dump()));
  std::vector<std::pair<std::string, YAML::Node>> entries;
  // JSON is YAML's flow style, so each value parses as the YAML node the fields decode.
  for (const auto& [key, value] : object.items()) entries.emplace_back(key, YAML::Load(value.dump()));
  return entries;
}

bool same_scalar(const YAML::Node& a, const YAML::Node& b) {
  if (!a.IsScalar() || !b.IsScalar()) return false;
  if (a.Scalar() == b.Scalar()) return true;
  double x = 0, y = 0;
  return YAML::convert<double>::decode(a, x) && YAML::convert<double>::decode(b, y) && x == y;
}

}  // namespace sg2::config
