#pragma once
// CLI11 flags made from a config Schema: every field `key` becomes `--key VALUE` with the field's
// help, type and default in --help, grouped by section. Values are kept as text and applied after
// the config file, parsed exactly like YAML values, so both paths give the same errors.

#include "sg2/core/config_schema.h"

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sg2::config {

struct CliValues {
  struct Binding {
    std::string key;      // config key the option sets
    CLI::Option* option;
    std::string* text;    // its raw value
  };
  std::map<std::string, std::string> text;  // option name -> raw value (std::map keeps addresses stable)
  std::vector<Binding> bindings;            // in the order they were added
};

// "5" -> scalar, "[a, b]" -> list, "null" or "~" -> null (a field's none value), '"a"' -> a;
// anything else (a map, "exp #3", which YAML would cut at the comment) stays the text as given.
YAML::Node parse_cli_value(const std::string& text);

// Option group shown in --help for a dotted key: "G.z_dim" -> "Config G.*".
std::string cli_group(const std::string& key);

template <class Config>
void add_cli_options(const Schema<Config>& schema, CLI::App& app, CliValues& values, const Config& defaults) {
  for (const auto& field : schema.fields()) {
    std::string description = field.help + " [default: " + flow_text(field.write(defaults)) + "]";
    if (!field.choices.empty()) {
      std::string list;
      for (const auto& c : field.choices) list += (list.empty() ? "" : "|") + c;
      description += " {" + list + "}";
    }
    std::string& text = values.text["--" + field.key];
    CLI::Option* option =
        app.add_option("--" + field.key, text, description)
            ->type_name(field.type_name)
            ->group(cli_group(field.key))
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // a later flag overrides
    values.bindings.push_back({field.key, option, &text});
  }
}

// A short flag for a field, e.g. --data for data.path.
template <class Config>
void add_cli_alias(const Schema<Config>& schema, CLI::App& app, CliValues& values, const std::string& flag,
                   const std::string& key) {
  const auto* field = schema.find(key);
  SG2_CHECK(field != nullptr, "alias {} names an unknown key {}", flag, key);
  std::string& text = values.text[flag];
  CLI::Option* option = app.add_option(flag, text, field->help + " (same as --" + key + ")")
                            ->type_name(field->type_name)
                            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  values.bindings.push_back({key, option, &text});
}

// Applies the fields given on the command line. A key given through two flags (--batch 8
// --train.batch 16) is an error naming both, not a silent choice.
template <class Config>
void apply_cli(const Schema<Config>& schema, Config& config, const CliValues& values) {
  std::map<std::string, std::string> flag_of_key;
  for (const auto& b : values.bindings) {
    if (b.option->count() == 0) continue;
    const auto [previous, first] = flag_of_key.emplace(b.key, b.option->get_name());
    SG2_CHECK(first, "{} and {} both set '{}' on the command line; give one of them", previous->second,
              b.option->get_name(), b.key);
    schema.set(config, b.key, parse_cli_value(*b.text), "command line " + b.option->get_name());
  }
}

// Turns arguments CLI11 did not recognise (with app.allow_extras()) into an error that suggests
// the nearest config key.
template <class Config>
void reject_extras(const Schema<Config>& schema, const std::vector<std::string>& extras) {
  for (const auto& arg : extras) {
    if (arg.rfind("--", 0) != 0) continue;
    const std::string key = arg.substr(2, arg.find('=') - 2);
    if (const std::string* note = schema.retired_note(key)) {
      throw Error("command line: --" + key + " is retired (" + *note + "); leave it out");
    }
    fail_unknown_key(key, "command line", schema.keys());
  }
  if (!extras.empty()) throw Error("unexpected command-line argument '" + extras.front() + "'");
}

// Whether the command line set `key` (through its flag or an alias).
bool cli_has(const CliValues& values, const std::string& key);

}  // namespace sg2::config
