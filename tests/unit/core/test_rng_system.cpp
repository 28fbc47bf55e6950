// Host RNG reproducibility and small system helpers.
#include "sg2/core/error.h"
#include "sg2/core/logging.h"
#include "sg2/core/progress.h"
#include "sg2/core/rng.h"
#include "sg2/core/system.h"
#include "test_support.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <set>

namespace sg2 {
namespace {

TEST(NumpyRandomState, MatchesNumpyRandn) {
  // numpy.random.RandomState(0).randn(4) and RandomState(42).randn(2), as numpy prints them.
  NumpyRandomState zero(0);
  const auto a = zero.randn(4);
  EXPECT_NEAR(a[0], 1.764052345967664, 1e-15);
  EXPECT_NEAR(a[1], 0.4001572083672233, 1e-15);
  EXPECT_NEAR(a[2], 0.9787379841057392, 1e-15);
  EXPECT_NEAR(a[3], 2.240893199201458, 1e-15);
  NumpyRandomState answer(42);
  const auto b = answer.randn(2);
  EXPECT_NEAR(b[0], 0.4967141530112327, 1e-15);
  EXPECT_NEAR(b[1], -0.13826430117118466, 1e-15);
}

TEST(SeededPermutation, IsAPermutationAndDependsOnTheSeed) {
  const auto p = seeded_permutation(1000, 7);
  std::set<int64_t> values(p.begin(), p.end());
  EXPECT_EQ(values.size(), 1000u);
  EXPECT_EQ(*values.begin(), 0);
  EXPECT_EQ(*values.rbegin(), 999);
  EXPECT_EQ(p, seeded_permutation(1000, 7));
  EXPECT_NE(p, seeded_permutation(1000, 8));
}

TEST(SplitMix64, BelowIsUnbiasedEnough) {
  SplitMix64 g(123);
  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) ++counts[g.below(6)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
}

TEST(IndexList, ParsesRangesAndRejectsJunk) {
  EXPECT_EQ(parse_index_list("0-3,7,10-11", "--seeds"), (std::vector<int64_t>{0, 1, 2, 3, 7, 10, 11}));
  EXPECT_THROW(parse_index_list("3-1", "--seeds"), Error);
  try {
    parse_index_list("1,x", "--seeds");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--seeds: 'x'"), std::string::npos) << e.what();
  }
}

TEST(IndexList, RefusesHugeListsBeforeExpandingThem) {
  const std::string message = test::error_message([] { parse_index_list("0-99999999999", "--seeds"); });
  EXPECT_NE(message.find("--seeds: '0-99999999999' lists more than 1000000 entries"), std::string::npos) << message;
  EXPECT_THROW(parse_index_list("0-5,7-9", "--seeds", 8), Error);
  // Ranges across the int64 line (a signed width overflows) and ending at its top (a loop to <= never ends).
  EXPECT_THROW(parse_index_list("-9223372036854775808-0", "--seeds"), Error);
  EXPECT_THROW(parse_index_list("-9223372036854775808-9223372036854775807", "--seeds"), Error);
  EXPECT_EQ(parse_index_list("9223372036854775806-9223372036854775807", "--seeds"),
            (std::vector<int64_t>{9223372036854775806, 9223372036854775807}));
  EXPECT_EQ(parse_index_list("9223372036854775807", "--seeds"), (std::vector<int64_t>{9223372036854775807}));
  EXPECT_EQ(parse_index_list("0-5,7-8", "--seeds", 8).size(), 8u);
}

TEST(FormatDuration, MatchesTheReferenceStyle) {
  EXPECT_EQ(format_duration(12), "12s");
  EXPECT_EQ(format_duration(184), "3m 04s");
  EXPECT_EQ(format_duration(7506), "2h 05m 06s");
  EXPECT_EQ(format_duration(93780), "1d 02h 03m");
}

TEST(ProgressMeter, RendersCountRateAndEta) {
  const std::string line = ProgressMeter::render("fake features", 2500, 5000, "img", 10.0, 10);
  EXPECT_EQ(line, "fake features [#####.....]  50% 2500/5000 img 250.0 img/s ETA 10s");
  EXPECT_NE(ProgressMeter::render("x", 0, 10, "img", 0.0).find("ETA ?"), std::string::npos);
  ProgressMeter quiet("quick work", 3, "img");  // ends before its first line: prints nothing, does not throw
  quiet.update(3);
  quiet.finish();
}

std::string read_text(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST(Logging, EveryRankWritesItsWarningsAndFatalErrorToTheLogFile) {
  test::TempDir dir;
  const std::string log = dir.file("log.txt");
  init_logging(1, false);  // a non-root rank: warnings and errors only, prefixed
  add_log_file(log);
  spdlog::info("not for other ranks");
  spdlog::warn("a warning");
  log_fatal_error("stylegan2_train: error on rank 1 of 2 (host h): disk full");
  init_logging(0, false);  // rank 0 again, without the file
  spdlog::info("after");
  EXPECT_EQ(read_text(log), "[rank 1] a warning\n[rank 1] stylegan2_train: error on rank 1 of 2 (host h): disk full\n");
}

}  // namespace
}  // namespace sg2
