#include "sg2/core/system.h"

#include "sg2/core/error.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

namespace sg2 {

bool limit_blas_threads() {
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr) return false;
  using SetThreads = void (*)(int);
  auto set_threads = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set_threads == nullptr) return false;
  set_threads(1);
  return true;
}

double peak_rss_gib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is in KiB
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < raw.size();) {  // NUL-separated
    const size_t end = raw.find('\0', start);
    args.push_back(raw.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return args;
}

std::string own_executable() {
  std::string path(4096, '\0');
  const ssize_t length = readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (length <= 0) return "";
  path.resize(static_cast<size_t>(length));
  return path;
}

std::string counted(int64_t count, const std::string& noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double current_rss_gib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0 * 1024.0);
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

namespace {
std::atomic<int> g_stop_signal{0};

void on_stop_signal(int signal_number) {
  if (g_stop_signal.exchange(signal_number) != 0) {
    ::signal(signal_number, SIG_DFL);  // second signal: default action
    ::raise(signal_number);
  }
}
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return g_stop_signal.load() != 0; }
int stop_signal() { return g_stop_signal.load(); }
void clear_stop_signal() { g_stop_signal.store(0); }

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {:02d}m {:02d}s", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}d {:02d}h {:02d}m", s / 86400, (s / 3600) % 24, (s / 60) % 60);
}

namespace {
int64_t parse_index(const std::string& item, const std::string& what) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(item, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  SG2_CHECK(used == item.size() && !item.empty(), "{}: '{}' is not an integer (expected e.g. 0-63,100)", what, item);
  return value;
}
}  // namespace

std::vector<int64_t> parse_index_list(const std::string& text, const std::string& what, int64_t max_entries) {
  std::vector<int64_t> out;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) {
    const auto dash = item.find('-', 1);
    if (dash == std::string::npos) {
      out.push_back(parse_index(item, what));
      SG2_CHECK(static_cast<int64_t>(out.size()) <= max_entries, "{}: '{}' lists more than {} entries", what, text,
                max_entries);
      continue;
    }
    const int64_t first = parse_index(item.substr(0, dash), what);
    const int64_t last = parse_index(item.substr(dash + 1), what);
    SG2_CHECK(first <= last, "{}: range '{}' runs backwards", what, item);
    // Checked before expanding (0-99999999999 must not allocate first), in unsigned arithmetic: the
    // width of a range across the whole int64 line overflows a signed difference.
    const uint64_t width = static_cast<uint64_t>(last) - static_cast<uint64_t>(first);  // entries - 1
    SG2_CHECK(width < static_cast<uint64_t>(max_entries) - out.size(), "{}: '{}' lists more than {} entries", what,
              text, max_entries);
    for (int64_t i = first;; ++i) {  // i <= last would never end at INT64_MAX
      out.push_back(i);
      if (i == last) break;
    }
  }
  SG2_CHECK(!out.empty(), "{}: empty list", what);
  return out;
}

}  // namespace sg2
