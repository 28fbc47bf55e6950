// snapshot_diff A B [--tolerance T] [--rms-tolerance R] [--prefixes G.,D.,G_ema.]: compares two
// snapshots' tensors with the given prefixes; prints per prefix the largest absolute difference (and
// its tensor) and the root mean square of the differences over all elements. Exit 0 when every
// difference is within T and every RMS within R, 1 when not (a NaN or Inf in either counts as an infinite
// difference), 2 on bad input (a tensor in only one of them).
#include "snapshot_compare.h"

#include "sg2/core/cli_parse.h"
#include "sg2/core/logging.h"
#include "sg2/train/out_of_memory.h"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"Compare the tensors of two stylegan2-cpp snapshots."};
  std::string path_a, path_b, prefixes = "G.,D.,G_ema.";
  double tolerance = 0, rms_tolerance = -1;
  app.add_option("a", path_a)->required()->check(CLI::ExistingFile);
  app.add_option("b", path_b)->required()->check(CLI::ExistingFile);
  app.add_option("--tolerance", tolerance, "Largest allowed absolute difference");
  app.add_option("--rms-tolerance", rms_tolerance,
                 "Largest allowed root mean square of the differences over all elements of a prefix (< 0: not checked)");
  app.add_option("--prefixes", prefixes, "Comma-separated tensor name prefixes");
  SG2_PARSE_COMMAND_LINE(app, argc, argv);
  int status = 2;
  sg2::run_reporting_errors("snapshot_diff", [&] {
    const auto a = sg2::train::load_snapshot(path_a), b = sg2::train::load_snapshot(path_b);
    status = 0;
    std::stringstream list(prefixes);
    for (std::string prefix; std::getline(list, prefix, ',');) {
      const sg2::test::SnapshotDifference worst = sg2::test::compare_snapshot_tensors(a, b, prefix);
      std::cout << fmt::format("{:<8} max |a - b| = {:.3e} ({}; {} tensors), rms {:.3e}\n", prefix, worst.diff,
                               worst.name, worst.compared, worst.rms());
      if (worst.diff > tolerance || (rms_tolerance >= 0 && worst.rms() > rms_tolerance)) status = 1;
    }
    return status;
  }, sg2::train::message_of);
  return status;
}
