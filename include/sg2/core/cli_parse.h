#pragma once
// One exit status for command-line mistakes in every program: CLI11's own codes (105 for a
// conversion error, 106 for a missing option, 114 for an excluded one, ...) become 1, the status of
// every other error; --help and --version stay 0. CLI11's message is printed as it is.
//
//   SG2_PARSE_COMMAND_LINE(app, argc, argv);  // in main(), in place of CLI11_PARSE

#include <CLI/CLI.hpp>

#define SG2_PARSE_COMMAND_LINE(app, argc, argv)          \
  try {                                                  \
    (app).parse((argc), (argv));                         \
  } catch (const CLI::ParseError& parse_error) {         \
    return (app).exit(parse_error) == 0 ? 0 : 1;         \
  }
