#pragma once
// One exit status for command-line mistakes in every program: CLI11's own codes (105 for a
// conversion error, 106 for a missing option, 114 for an excluded one, ...) become 1, the status of
// every other error; --help and --version stay 0. CLI11's message is printed as it is.
//
//   SG2_PARSE_COMMAND_LINE(app, argc, argv);  // in main(), in place of CLI11_PARSE

#include <CLI/CLI.hpp>

#include <string>

namespace sg2 {

// CLI11's "--seeds: At Most 1 required but received 2" (a one-value option given twice), in words.
inline std::string explain_repeated_option(const std::string& message) {
  const std::string marker = ": At Most 1 required but received ";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return "";
  return message.substr(0, at) + " is given " + message.substr(at + marker.size()) +
         " times; give it once (a list is one value: 0-7 or 1,5,9, without spaces)";
}

}  // namespace sg2

#define SG2_PARSE_COMMAND_LINE(app, argc, argv)                                                         \
  try {                                                                                                 \
    (app).parse((argc), (argv));                                                                        \
  } catch (const CLI::ParseError& parse_error) {                                                        \
    const std::string repeated = ::sg2::explain_repeated_option(parse_error.what());                    \
    if (!repeated.empty()) return (app).exit(CLI::ArgumentMismatch(repeated)) == 0 ? 0 : 1;            \
    return (app).exit(parse_error) == 0 ? 0 : 1;                                                        \
  }
