#pragma once
// An enum's names in one table, read both ways: parse_enum for config values and flags (an unknown
// name fails naming what it is and the choices), enum_name for logs and written configs.
//   constexpr EnumNames<NoiseMode, 3> kNoiseModes{{{NoiseMode::Random, "random"}, ...}};
//   parse_enum(kNoiseModes, "const", "noise mode") -> NoiseMode::Const

#include "sg2/core/error.h"

#include <array>
#include <string>
#include <utility>

namespace sg2 {

template <class Enum, size_t N>
using EnumNames = std::array<std::pair<Enum, const char*>, N>;

// "a, b or c"
template <class Enum, size_t N>
std::string enum_choices(const EnumNames<Enum, N>& names) {
  std::string out;
  for (size_t i = 0; i < N; ++i) out += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i].second);
  return out;
}

template <class Enum, size_t N>
Enum parse_enum(const EnumNames<Enum, N>& names, const std::string& name, const char* what) {
  for (const auto& [value, value_name] : names) {
    if (name == value_name) return value;
  }
  SG2_FAIL("unknown {} '{}' (expected {})", what, name, enum_choices(names));
}

template <class Enum, size_t N>
const char* enum_name(const EnumNames<Enum, N>& names, Enum value) {
  for (const auto& [candidate, name] : names) {
    if (candidate == value) return name;
  }
  return "?";
}

// The name of a value of an enum whose table `enum_names(Enum{})` returns (argument-dependent lookup).
template <class Enum>
const char* name_of(Enum value) {
  return enum_name(enum_names(value), value);
}

}  // namespace sg2
