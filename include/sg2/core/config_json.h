#pragma once
// The JSON form of a config schema (config_schema.h): a flat object of its keys, e.g. the networks'
// options {"z_dim": 512, "conv_clamp": null, ...} that the parity fixtures use and snapshots store.
// A field's none value (Field::none_is) is written as null, as the reference's None.

#include "sg2/core/config_schema.h"

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace sg2::config {

// The JSON value of a field's YAML node, typed by the field's type name (an undefined or null node: null).
nlohmann::json json_from_node(const YAML::Node& node, const std::string& type_name);
// The (key, YAML node) pairs of a JSON object; `source` names it in errors.
std::vector<std::pair<std::string, YAML::Node>> json_object_entries(const nlohmann::json& object,
                                                                   const std::string& source);
// Whether two scalar nodes hold the same value (e.g. -1 and -1.0).
bool same_scalar(const YAML::Node& a, const YAML::Node& b);

// A JSON object of every field of `config`.
template <class Config>
nlohmann::json to_json(const Schema<Config>& schema, const Config& config) {
  nlohmann::json object = nlohmann::json::object();
  for (const auto& field : schema.fields()) {
    const YAML::Node value = field.write(config);
    const bool none = field.has_none() && same_scalar(value, field.none_value);
    object[field.key] = json_from_node(none ? YAML::Node() : value, field.type_name);
  }
  return object;
}

// Sets the fields of `config` a JSON object names (null: a field's none value); `source` names the
// object in errors. Returns the keys the schema does not know, for the caller to judge.
template <class Config>
std::vector<std::string> read_json(const Schema<Config>& schema, Config& config, const nlohmann::json& object,
                                   const std::string& source) {
  std::vector<std::string> unknown;
  for (const auto& [key, node] : json_object_entries(object, source)) {
    if (schema.find(key) == nullptr) {
      unknown.push_back(key);
      continue;
    }
    schema.set(config, key, node, source);
  }
  return unknown;
}

}  // namespace sg2::config
