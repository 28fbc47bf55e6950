// stylegan2_launch's library: the rank environment, exit codes, stopping the other ranks when one
// fails, forwarding signals, option errors. The children are /bin/sh scripts.
#include "sg2/distributed/launcher.h"
#include "test_support.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace sg2::dist {
namespace {

using Clock = std::chrono::steady_clock;

LaunchOptions shell_job(int nproc, const std::string& script) {
  LaunchOptions options;
  options.nproc_per_node = nproc;
  options.grace_seconds = 1;
  options.command = {"/bin/sh", "-c", script};
  return options;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

std::map<std::string, std::string> read_env_dump(const std::string& path) {
  std::map<std::string, std::string> variables;
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);) {
    const auto equals = line.find('=');
    if (equals != std::string::npos) variables[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return variables;
}

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

std::string pid_file(const test::TempDir& dir, const std::string& local_rank) { return dir.file("pid_" + local_rank); }
pid_t read_pid(const test::TempDir& dir, int local_rank) {
  return std::atoi(read_text(pid_file(dir, std::to_string(local_rank))).c_str());
}

// Shell: the rank writes its pid file and becomes `sleep 30` (same pid).
std::string sleep_script(const test::TempDir& dir) {
  return "echo $$ > " + pid_file(dir, "$LOCAL_RANK") + "; exec sleep 30";
}

// Shell: holds until the given local ranks have written their pid files.
std::string wait_for_pids(const test::TempDir& dir, const std::vector<int>& local_ranks) {
  std::vector<std::string> missing;
  for (int r : local_ranks) missing.push_back("[ ! -s " + pid_file(dir, std::to_string(r)) + " ]");
  return fmt::format("while {}; do sleep 0.05; done; ", fmt::join(missing, " || "));
}

TEST(Launcher, SetsTheRankEnvironmentOnTopOfTheInheritedOne) {
  test::TempDir dir;
  setenv("SG2_LAUNCHER_TEST_INHERITED", "kept", 1);
  setenv("RANK", "99", 1);  // a stale value from an outer launcher must be replaced
  LaunchOptions options = shell_job(2, "env > " + dir.file("env_$LOCAL_RANK"));
  options.nnodes = 2;
  options.node_rank = 1;
  options.master_addr = "10.1.2.3";
  options.master_port = 12345;
  const int code = launch(options);
  unsetenv("SG2_LAUNCHER_TEST_INHERITED");
  unsetenv("RANK");
  ASSERT_EQ(code, 0);
  for (int local_rank = 0; local_rank < 2; ++local_rank) {
    auto env = read_env_dump(dir.file("env_" + std::to_string(local_rank)));
    EXPECT_EQ(env["RANK"], std::to_string(2 + local_rank));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(local_rank));
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(env["NODE_RANK"], "1");
    EXPECT_EQ(env["MASTER_ADDR"], "10.1.2.3");
    EXPECT_EQ(env["MASTER_PORT"], "12345");
    EXPECT_EQ(env["SG2_LAUNCHER_TEST_INHERITED"], "kept");
  }
}

TEST(Launcher, DefaultsToALocalMaster) {
  const auto env = rank_environment(LaunchOptions{}, 0);
  EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env.at("RANK"), "0");
  EXPECT_EQ(env.at("WORLD_SIZE"), "1");
}

TEST(Launcher, ReturnsZeroWhenEveryRankSucceeds) {
  EXPECT_EQ(launch(shell_job(4, "exit 0")), 0);
}

TEST(Launcher, StopsTheOtherRanksAndReturnsTheFailingRanksCode) {
  test::TempDir dir;
  const std::string script = "if [ $LOCAL_RANK = 1 ]; then " + wait_for_pids(dir, {0, 2}) + "exit 3; fi; " +
                             sleep_script(dir);
  const auto start = Clock::now();
  EXPECT_EQ(launch(shell_job(3, script)), 3);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_FALSE(process_exists(read_pid(dir, 0)));
  EXPECT_FALSE(process_exists(read_pid(dir, 2)));
}

TEST(Launcher, ReturnsOneTwentyEightPlusTheSignalOfAKilledRank) {
  EXPECT_EQ(launch(shell_job(2, "if [ $LOCAL_RANK = 0 ]; then kill -KILL $$; fi; exec sleep 30")), 128 + SIGKILL);
}

TEST(Launcher, KillsARankThatIgnoresSigtermAfterTheGracePeriod) {
  test::TempDir dir;
  const std::string script = "if [ $LOCAL_RANK = 1 ]; then " + wait_for_pids(dir, {0}) + "exit 5; fi; trap '' TERM; " +
                             sleep_script(dir);
  const auto start = Clock::now();
  EXPECT_EQ(launch(shell_job(2, script)), 5);  // grace_seconds = 1
  const double seconds = seconds_since(start);
  EXPECT_GE(seconds, 1.0);
  EXPECT_LT(seconds, 5.0);
  EXPECT_FALSE(process_exists(read_pid(dir, 0)));
}

TEST(Launcher, ForwardsSigtermToEveryRank) {
  test::TempDir dir;
  // Rank 1 signals the launcher ($PPID) once rank 0 has installed its trap; both exit 7 on SIGTERM.
  const std::string script = "trap 'exit 7' TERM; if [ $LOCAL_RANK = 1 ]; then " + wait_for_pids(dir, {0}) +
                             "kill -TERM $PPID; else echo $$ > " + pid_file(dir, "0") + "; fi; sleep 30 & wait";
  const auto start = Clock::now();
  EXPECT_EQ(launch(shell_job(2, script)), 7);
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(Launcher, KeepsIgnoringAStopSignalItInheritedAsIgnored) {
  // As under nohup: had the launcher acted on SIGHUP, grace 0 would have SIGKILLed the rank (137).
  const auto caller_action = signal(SIGHUP, SIG_IGN);
  LaunchOptions options = shell_job(1, "kill -HUP $PPID; sleep 0.3; exit 0");
  options.grace_seconds = 0;
  EXPECT_EQ(launch(options), 0);
  signal(SIGHUP, caller_action);
}

TEST(Launcher, ReturnsOneTwentySevenWhenTheProgramCannotBeExecuted) {
  test::TempDir dir;
  LaunchOptions options;
  options.nproc_per_node = 2;
  options.command = {"sg2-no-such-program", "--flag"};
  options.log_dir = dir.file("logs");
  EXPECT_EQ(launch(options), 127);
  // The first rank to fail ends the job, so the other may be terminated before its exec fails.
  const std::string message = "cannot execute 'sg2-no-such-program': ";
  int logs_with_message = 0;
  for (int rank = 0; rank < 2; ++rank)
    logs_with_message += read_text(rank_log_path(options.log_dir, rank)).find(message) != std::string::npos;
  EXPECT_GE(logs_with_message, 1);
}

TEST(Launcher, WritesEachRanksOutputToItsLogFile) {
  test::TempDir dir;
  LaunchOptions options = shell_job(2, "echo out $RANK; echo err $RANK >&2");
  options.log_dir = dir.file("logs/run1");
  ASSERT_EQ(launch(options), 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = read_text(rank_log_path(options.log_dir, rank));
    EXPECT_NE(log.find("out " + std::to_string(rank) + "\n"), std::string::npos) << log;
    EXPECT_NE(log.find("err " + std::to_string(rank) + "\n"), std::string::npos) << log;
  }
}

TEST(Launcher, NamesTheFlagOfAnInvalidOption) {
  const auto message_for = [](const std::function<void(LaunchOptions&)>& change) {
    LaunchOptions options = shell_job(1, "exit 0");
    change(options);
    return test::error_message([&] { launch(options); });
  };
  EXPECT_NE(message_for([](auto& o) { o.nproc_per_node = 0; }).find("--nproc-per-node 0"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.nnodes = 0; }).find("--nnodes 0"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) {
              o.nnodes = 2;
              o.node_rank = 2;
            }).find("--node-rank 2"),
            std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.node_rank = -1; }).find("--node-rank -1"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.master_port = 0; }).find("--master-port 0"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.master_port = 65536; }).find("1-65535"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.master_addr = ""; }).find("--master-addr"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.grace_seconds = -1; }).find("--grace-seconds"), std::string::npos);
  EXPECT_NE(message_for([](auto& o) { o.command.clear(); }).find("-- program"), std::string::npos);
  EXPECT_EQ(message_for([](auto& o) {}), "");
}

}  // namespace
}  // namespace sg2::dist
