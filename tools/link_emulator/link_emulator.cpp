// link_emulator: the network of an emulated cluster with a bandwidth and a latency, for
// kernels without tc's netem. One TUN device per node, created inside the node's network namespace;
// every IPv4 packet a node sends is held for its egress at RATE plus the one-way DELAY
// (link_schedule.h), then written to the destination node's device. A TCP segment of up to 64 KiB
// (the devices' segmentation offload) takes the time of its bytes on the wire, less the headers
// of the MTU-sized frames it would be cut into (under 1% at MTU 9000). Prints "link_emulator: ready"
// once every device exists (the caller then gives them their addresses and brings them up), runs
// until SIGTERM or SIGINT, and prints what each node sent and what was dropped.
//   link_emulator --rate 1gbit --delay 500us sg2emu0=10.78.0.1 sg2emu1=10.78.0.2
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

#include "link_schedule.h"
#include "tun_device.h"

namespace sg2::tools {
namespace {

constexpr std::size_t kMaxPacketBytes = std::size_t{1} << 17;  // a 64 KiB segment and its header

Nanoseconds monotonic_now() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return Nanoseconds{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

struct NodeCounts {
  std::uint64_t packets = 0, bytes = 0, queue_drops = 0, unroutable = 0, undelivered = 0;
};

class Emulator {
 public:
  Emulator(std::vector<TunDevice> devices, std::vector<std::uint32_t> addresses, LinkParameters link,
           Topology topology)
      : devices_(std::move(devices)),
        addresses_(std::move(addresses)),
        schedule_(static_cast<int>(devices_.size()), link, topology),
        counts_(devices_.size()),
        signals_(stop_signals()) {}

  // Forwards packets until SIGTERM or SIGINT.
  void run() {
    const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
    timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (epoll < 0 || timer_ < 0 || signals_ < 0) throw system_error("epoll/timerfd/signalfd");
    for (std::size_t node = 0; node < devices_.size(); ++node) watch(epoll, devices_[node].fd(), node);
    watch(epoll, timer_, kTimer);
    watch(epoll, signals_, kSignal);
    for (bool stop = false; !stop;) {
      epoll_event events[16];
      const int ready = ::epoll_wait(epoll, events, 16, -1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) throw system_error("epoll_wait");
      for (int i = 0; i < ready; ++i) {
        const std::uint64_t source = events[i].data.u64;
        if (source == kSignal) stop = true;
        if (source < devices_.size()) receive_from(static_cast<int>(source));
      }
      deliver_arrived();
    }
  }

  // What each node sent and lost, and the emulator's own CPU time (taken from the nodes' cores).
  void print_counts(std::FILE* out) const {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
    std::fprintf(out, "link_emulator: %.2f s of CPU (%.2f user, %.2f system) over %.2f s\n",
                 seconds(usage.ru_utime) + seconds(usage.ru_stime), seconds(usage.ru_utime), seconds(usage.ru_stime),
                 static_cast<double>(monotonic_now() - started_) * 1e-9);
    for (std::size_t node = 0; node < devices_.size(); ++node) {
      const NodeCounts& c = counts_[node];
      std::fprintf(out,
                   "link_emulator: node %zu (%s) sent %llu packets, %llu bytes; dropped %llu in its queue, %llu "
                   "for no node, %llu it could not be given\n",
                   node, devices_[node].netns().c_str(), static_cast<unsigned long long>(c.packets),
                   static_cast<unsigned long long>(c.bytes), static_cast<unsigned long long>(c.queue_drops),
                   static_cast<unsigned long long>(c.unroutable), static_cast<unsigned long long>(c.undelivered));
    }
  }

 private:
  static constexpr std::uint64_t kTimer = ~std::uint64_t{0}, kSignal = kTimer - 1;

  static void watch(int epoll, int fd, std::uint64_t source) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = source;
    if (::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) throw system_error("epoll_ctl");
  }

  // A descriptor that reads SIGTERM and SIGINT (blocked for normal delivery).
  static int stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) throw system_error("sigprocmask");
    return ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  }

  // Reads every packet node `from` has sent and schedules it.
  void receive_from(int from) {
    for (;;) {
      const ssize_t size = ::read(devices_[from].fd(), buffer_.data(), buffer_.size());
      if (size < 0 && errno == EINTR) continue;
      if (size < 0 && errno == EAGAIN) return;
      if (size < 0) throw system_error("reading the device of node " + std::to_string(from));
      NodeCounts& counts = counts_[from];
      // [virtio-net header][IP packet]: the header travels with the packet, only the packet takes time
      const std::size_t header = TunDevice::vnet_header_bytes();
      if (static_cast<std::size_t>(size) <= header) continue;
      const std::size_t packet_bytes = static_cast<std::size_t>(size) - header;
      const int to = destination_node(buffer_.data() + header, packet_bytes, addresses_);
      if (to < 0) {
        ++counts.unroutable;
        continue;
      }
      const auto arrival = schedule_.arrival(from, to, packet_bytes, monotonic_now());
      if (!arrival) {
        ++counts.queue_drops;
        continue;
      }
      ++counts.packets;
      counts.bytes += packet_bytes;
      in_flight_.push(*arrival, to, std::vector<std::uint8_t>(buffer_.begin(), buffer_.begin() + size));
    }
  }

  // Writes every packet that has arrived to its node, then sets the timer for the next one.
  void deliver_arrived() {
    std::uint64_t expirations = 0;
    while (::read(timer_, &expirations, sizeof expirations) > 0) {
    }
    const Nanoseconds now = monotonic_now();
    while (auto packet = in_flight_.pop_arrived(now)) {
      if (::write(devices_[packet->to].fd(), packet->bytes.data(), packet->bytes.size()) < 0) {
        ++counts_[packet->to].undelivered;  // a device not up yet, or its queue full: a lost packet
      }
    }
    itimerspec next{};  // zero: disarmed
    if (!in_flight_.empty()) {
      const Nanoseconds at = in_flight_.next_arrival();
      next.it_value = {static_cast<time_t>(at / 1'000'000'000), static_cast<long>(at % 1'000'000'000)};
    }
    if (::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &next, nullptr) != 0) throw system_error("timerfd_settime");
  }

  std::vector<TunDevice> devices_;
  std::vector<std::uint32_t> addresses_;
  LinkSchedule schedule_;
  DeliveryQueue in_flight_;
  std::vector<NodeCounts> counts_;
  int signals_ = -1;
  int timer_ = -1;
  Nanoseconds started_ = monotonic_now();
  std::vector<std::uint8_t> buffer_ = std::vector<std::uint8_t>(kMaxPacketBytes);  // one packet read
};

// "NETNS=ADDRESS" -> the namespace and the address of the node.
std::pair<std::string, std::uint32_t> parse_node(const std::string& text) {
  const auto equals = text.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw std::invalid_argument("node '" + text + "' must be NETNS=ADDRESS (e.g. sg2emu0=10.78.0.1)");
  }
  return {text.substr(0, equals), parse_ipv4(text.substr(equals + 1))};
}

int run(int argc, char** argv) {
  CLI::App app{"Emulated links between network namespaces: a bandwidth and a one-way latency per node"};
  std::string rate = "none", delay = "0", queue_limit = "200ms", device = "eth0";
  std::string node_rate = "none", node_delay = "0";
  int hosts_per_node = 0;
  std::vector<std::string> nodes;
  app.add_option("--rate", rate, "each node's egress rate: 1gbit, 200mbit, ... or none");
  app.add_option("--delay", delay, "one-way delay of every packet: 500us, 0.1ms, ... or 0");
  app.add_option("--queue-limit", queue_limit, "the longest a packet waits for its egress before it is dropped");
  app.add_option("--hosts-per-node", hosts_per_node,
                 "two levels: the namespaces in groups of this many (a node of GPUs), linked at --rate and --delay; "
                 "between groups through one NIC a group at --node-rate, --node-delay apart (0: one level)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--node-rate", node_rate, "two levels: each node's NIC rate, in and out");
  app.add_option("--node-delay", node_delay, "two levels: one-way delay between nodes");
  app.add_option("--device", device, "the TUN device's name in every namespace");
  app.add_option("nodes", nodes, "NETNS=ADDRESS of each node (at least two)")->required();
  CLI11_PARSE(app, argc, argv);
  if (nodes.size() < 2) throw std::invalid_argument("an emulated network needs at least two nodes");

  const LinkParameters link{parse_rate(rate), parse_duration(delay), parse_duration(queue_limit)};
  const Topology topology{hosts_per_node,
                          LinkParameters{parse_rate(node_rate), parse_duration(node_delay), parse_duration(queue_limit)}};
  std::vector<TunDevice> devices;
  std::vector<std::uint32_t> addresses;
  for (const std::string& node : nodes) {
    const auto [netns, address] = parse_node(node);
    devices.emplace_back(netns, device);
    addresses.push_back(address);
  }
  Emulator emulator(std::move(devices), std::move(addresses), link, topology);
  std::printf("link_emulator: ready, %zu nodes, rate %s, one-way delay %s", nodes.size(), rate.c_str(), delay.c_str());
  if (hosts_per_node > 0) {
    std::printf("; %d a group, between groups %s, one-way delay %s", hosts_per_node, node_rate.c_str(),
                node_delay.c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
  emulator.run();
  emulator.print_counts(stderr);
  return 0;
}

}  // namespace
}  // namespace sg2::tools

int main(int argc, char** argv) {
  try {
    return sg2::tools::run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "link_emulator: %s\n", error.what());
    return 1;
  }
}
