#include "sg2/distributed/launcher.h"

#include "sg2/core/error.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string_view>

extern char** environ;

namespace sg2::dist {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kCannotExecute = 127;          // the shell's code for "command not found"
constexpr int64_t kMaxWorldSize = 1 << 20;   // as read_env_rendezvous() accepts
constexpr int64_t kMaxRanksPerNode = 1024;    // far more GPUs than a node has; more only exhausts its processes
constexpr double kMaxGraceSeconds = 86400;
constexpr auto kPollInterval = std::chrono::milliseconds(200);

struct Child {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = -1;
  bool running = true;
  std::string describe() const { return fmt::format("rank {} (local rank {}, pid {})", rank, local_rank, pid); }
};

std::string signal_name(int signal_number) {
  static const std::map<int, const char*> names = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"}};
  const auto found = names.find(signal_number);
  return found != names.end() ? found->second : fmt::format("signal {}", signal_number);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return fmt::format("was killed by {}{}", signal_name(WTERMSIG(status)), WCOREDUMP(status) ? " (core dumped)" : "");
}

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

bool is_ignored(int signal_number) {
  struct sigaction current {};
  sigaction(signal_number, nullptr, &current);
  return current.sa_handler == SIG_IGN;
}

// Blocks the signals the launcher waits for, so that none arrives unseen between two waits, and
// restores the caller's mask and SIGCHLD action (SIG_IGN there would reap the children for us).
// Stop signals the launcher inherited as ignored (nohup, a shell's background job) stay ignored:
// blocked, they would be queued and acted on.
class BlockedSignals {
 public:
  BlockedSignals() {
    sigemptyset(&waited_);
    sigaddset(&waited_, SIGCHLD);
    for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
      if (!is_ignored(signal_number)) sigaddset(&waited_, signal_number);
    }
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &default_action, &caller_sigchld_);
    pthread_sigmask(SIG_BLOCK, &waited_, &caller_mask_);
  }
  ~BlockedSignals() {
    pthread_sigmask(SIG_SETMASK, &caller_mask_, nullptr);
    sigaction(SIGCHLD, &caller_sigchld_, nullptr);
  }
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;

  const sigset_t& caller_mask() const { return caller_mask_; }

  // The signal received within `timeout`, or 0.
  int wait(Clock::duration timeout) const {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::max(timeout, Clock::duration::zero()));
    const timespec limit{static_cast<time_t>(ns.count() / 1000000000), static_cast<long>(ns.count() % 1000000000)};
    return std::max(sigtimedwait(&waited_, nullptr, &limit), 0);
  }

 private:
  sigset_t waited_{};
  sigset_t caller_mask_{};
  struct sigaction caller_sigchld_ {};
};

// Once the child has called setsid() it leads its own process group; until then, signal it alone.
void signal_child(const Child& child, int signal_number) {
  if (killpg(child.pid, signal_number) != 0) kill(child.pid, signal_number);
}

std::vector<std::string> child_environment(const LaunchOptions& options, int local_rank) {
  const auto ours = rank_environment(options, local_rank);
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    if (ours.count(std::string(text.substr(0, text.find('=')))) == 0) environment.emplace_back(text);
  }
  for (const auto& [name, value] : ours) environment.push_back(name + "=" + value);
  return environment;
}

std::vector<char*> null_terminated(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& text : strings) pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

// -1 when not logging. O_CLOEXEC: only the child that dup2()s it onto stdout and stderr keeps it.
int open_rank_log(const std::string& log_dir, int rank) {
  if (log_dir.empty()) return -1;
  const std::string path = rank_log_path(log_dir, rank);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  SG2_CHECK(fd >= 0, "--log-dir: cannot open {}: {}", path, std::strerror(errno));
  return fd;
}

void write_text(int fd, const char* text) {
  if (write(fd, text, std::strlen(text)) < 0) return;  // nowhere left to report it
}

// Runs in the forked child: async-signal-safe calls only, everything else was prepared before fork.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int output_fd, const sigset_t& signal_mask,
                             pid_t launcher, const char* exec_error) {
  setsid();
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != launcher) _exit(kCannotExecute);  // the launcher died before prctl()
  pthread_sigmask(SIG_SETMASK, &signal_mask, nullptr);
  if (output_fd >= 0) {
    dup2(output_fd, STDOUT_FILENO);
    dup2(output_fd, STDERR_FILENO);
  }
  execvpe(argv[0], argv, envp);
  const char* reason = std::strerror(errno);
  write_text(STDERR_FILENO, exec_error);
  write_text(STDERR_FILENO, reason);
  write_text(STDERR_FILENO, "\n");
  _exit(kCannotExecute);
}

Child spawn(const LaunchOptions& options, int local_rank, const sigset_t& child_signal_mask) {
  Child child{options.node_rank * options.nproc_per_node + local_rank, local_rank};
  std::vector<std::string> arguments = options.command;
  std::vector<std::string> environment = child_environment(options, local_rank);
  const std::vector<char*> argv = null_terminated(arguments);
  const std::vector<char*> envp = null_terminated(environment);
  const std::string exec_error = fmt::format("cannot execute '{}': ", options.command[0]);
  const int output_fd = open_rank_log(options.log_dir, child.rank);
  const pid_t launcher = getpid();
  child.pid = fork();
  if (child.pid == 0) exec_child(argv.data(), envp.data(), output_fd, child_signal_mask, launcher, exec_error.c_str());
  const int fork_error = errno;
  if (output_fd >= 0) close(output_fd);
  SG2_CHECK(child.pid > 0, "cannot start rank {}: fork failed: {}", child.rank, std::strerror(fork_error));
  return child;
}

std::vector<Child> spawn_all(const LaunchOptions& options, const sigset_t& child_signal_mask) {
  std::vector<Child> children;
  try {
    for (int i = 0; i < options.nproc_per_node; ++i) children.push_back(spawn(options, i, child_signal_mask));
  } catch (...) {
    for (const Child& child : children) {
      signal_child(child, SIGKILL);
      waitpid(child.pid, nullptr, 0);
    }
    throw;
  }
  return children;
}

// Waits for the children; on the first failure or a forwarded signal it starts the grace period,
// after which the children still running are killed.
class Supervisor {
 public:
  Supervisor(std::vector<Child> children, double grace_seconds)
      : children_(std::move(children)), grace_seconds_(grace_seconds) {}

  int run(const BlockedSignals& signals) {
    while (!running_ranks().empty()) {
      const int received = signals.wait(time_to_next_check());
      if (received != 0 && received != SIGCHLD) forward(received);
      reap_exited();
      if (phase_ == Phase::Stopping && !running_ranks().empty() && Clock::now() >= deadline_) kill_remaining();
    }
    return exit_code_;
  }

 private:
  enum class Phase { Running, Stopping, Killing };

  std::vector<int> running_ranks() const {
    std::vector<int> ranks;
    for (const Child& child : children_) {
      if (child.running) ranks.push_back(child.rank);
    }
    return ranks;
  }

  void signal_running(int signal_number) const {
    for (const Child& child : children_) {
      if (child.running) signal_child(child, signal_number);
    }
  }

  Clock::duration time_to_next_check() const {
    if (phase_ != Phase::Stopping) return kPollInterval;
    return std::min<Clock::duration>(deadline_ - Clock::now(), kPollInterval);
  }

  void start_grace_period() {
    if (phase_ != Phase::Running) return;
    phase_ = Phase::Stopping;
    const std::chrono::duration<double> grace(grace_seconds_);
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(grace);
  }

  void forward(int signal_number) {
    spdlog::warn("received {}: forwarding it to ranks {}", signal_name(signal_number), running_ranks());
    signal_running(signal_number);
    start_grace_period();
  }

  void reap_exited() {
    for (Child& child : children_) {
      int status = 0;
      const pid_t result = child.running ? waitpid(child.pid, &status, WNOHANG) : 0;
      if (result == child.pid) on_exit(child, status);
      if (result < 0 && errno == ECHILD) on_lost(child);
    }
  }

  void on_exit(Child& child, int status) {
    child.running = false;
    if (exit_code_of(status) == 0) return;
    if (exit_code_ != 0) {
      spdlog::debug("{} {}", child.describe(), describe_status(status));
      return;
    }
    exit_code_ = exit_code_of(status);
    spdlog::error("{} {}", child.describe(), describe_status(status));
    if (phase_ == Phase::Running && !running_ranks().empty()) {
      spdlog::warn("sending SIGTERM to ranks {}, then SIGKILL after {}s", running_ranks(), grace_seconds_);
      signal_running(SIGTERM);
      start_grace_period();
    }
  }

  void on_lost(Child& child) {  // someone else in this process reaped it
    child.running = false;
    spdlog::error("{} was reaped outside the launcher; its exit status is unknown", child.describe());
    if (exit_code_ == 0) exit_code_ = 1;
  }

  void kill_remaining() {
    spdlog::warn("ranks {} still running {}s after SIGTERM: sending SIGKILL", running_ranks(), grace_seconds_);
    signal_running(SIGKILL);
    phase_ = Phase::Killing;
  }

  std::vector<Child> children_;
  double grace_seconds_;
  Phase phase_ = Phase::Running;
  Clock::time_point deadline_;
  int exit_code_ = 0;
};

void log_start(const LaunchOptions& options) {
  const int first = options.node_rank * options.nproc_per_node;
  spdlog::info("starting ranks {}-{} of {} (node {} of {}, master {}:{}): {}", first,
               first + options.nproc_per_node - 1, options.nnodes * options.nproc_per_node, options.node_rank,
               options.nnodes, options.master_addr, options.master_port, fmt::join(options.command, " "));
  if (!options.log_dir.empty()) {
    const auto pattern = std::filesystem::path(options.log_dir) / "rank_<RANK>.log";
    spdlog::info("each rank writes its output to {}", pattern.string());
  }
}

}  // namespace

void validate(const LaunchOptions& o) {
  SG2_CHECK(o.nproc_per_node >= 1 && o.nproc_per_node <= kMaxRanksPerNode,
            "--nproc-per-node {}: expected 1 to {} processes (one per GPU)", o.nproc_per_node, kMaxRanksPerNode);
  SG2_CHECK(o.nnodes >= 1, "--nnodes {}: expected a number of nodes >= 1", o.nnodes);
  SG2_CHECK(o.node_rank >= 0 && o.node_rank < o.nnodes, "--node-rank {}: expected 0 <= node rank < --nnodes ({})",
            o.node_rank, o.nnodes);
  const int64_t world_size = static_cast<int64_t>(o.nnodes) * o.nproc_per_node;
  SG2_CHECK(world_size <= kMaxWorldSize, "--nnodes x --nproc-per-node = {} ranks: expected at most {}", world_size,
            kMaxWorldSize);
  SG2_CHECK(!o.master_addr.empty(), "--master-addr: expected a host name or IP address, got an empty string");
  SG2_CHECK(o.master_port >= 1 && o.master_port <= 65535, "--master-port {}: expected a TCP port in 1-65535",
            o.master_port);
  SG2_CHECK(o.grace_seconds >= 0 && o.grace_seconds <= kMaxGraceSeconds,
            "--grace-seconds {}: expected seconds in [0, {}]", o.grace_seconds, kMaxGraceSeconds);
  SG2_CHECK(!o.command.empty() && !o.command[0].empty(),
            "no program to launch: expected `stylegan2_launch [options] -- program [args...]`");
}

std::map<std::string, std::string> rank_environment(const LaunchOptions& options, int local_rank) {
  return {{"RANK", std::to_string(options.node_rank * options.nproc_per_node + local_rank)},
          {"LOCAL_RANK", std::to_string(local_rank)},
          {"WORLD_SIZE", std::to_string(options.nnodes * options.nproc_per_node)},
          {"LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node)},
          {"NODE_RANK", std::to_string(options.node_rank)},
          {"MASTER_ADDR", options.master_addr},
          {"MASTER_PORT", std::to_string(options.master_port)}};
}

std::string rank_log_path(const std::string& log_dir, int rank) {
  return (std::filesystem::path(log_dir) / fmt::format("rank_{}.log", rank)).string();
}

int launch(const LaunchOptions& options) {
  validate(options);
  if (!options.log_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.log_dir, error);
    SG2_CHECK(!error, "--log-dir {}: cannot create the directory: {}", options.log_dir, error.message());
  }
  const BlockedSignals signals;
  log_start(options);
  Supervisor supervisor(spawn_all(options, signals.caller_mask()), options.grace_seconds);
  return supervisor.run(signals);
}

}  // namespace sg2::dist
