#include "link_schedule.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace sg2::tools {
namespace {

struct Unit {
  const char* suffix;
  double scale;
};

// The number before the first of `units` that ends `text`; `what` names the kind for the error.
double parse_with_units(const std::string& text, const std::vector<Unit>& units, const char* what,
                        const char* examples) {
  const auto invalid = [&] {
    return std::invalid_argument("'" + text + "' is not a " + what + " (expected e.g. " + examples + ")");
  };
  if (text == "0") return 0;
  for (const Unit& unit : units) {
    const std::string suffix = unit.suffix;
    if (text.size() <= suffix.size() || text.compare(text.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string number = text.substr(0, text.size() - suffix.size());
    std::size_t used = 0;
    double value = 0;
    try {
      value = std::stod(number, &used);
    } catch (const std::exception&) {
      throw invalid();
    }
    if (used != number.size() || !std::isfinite(value) || value < 0) throw invalid();
    return value * unit.scale;
  }
  throw invalid();
}

}  // namespace

double parse_rate(const std::string& text) {
  if (text == "none") return 0;
  const double rate = parse_with_units(text, {{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"bit", 1}},
                                       "rate", "1gbit, 200mbit or none");
  if (rate == 0) throw std::invalid_argument("a rate of 0 sends nothing: use 'none' for an unshaped link");
  return rate;
}

Nanoseconds parse_duration(const std::string& text) {
  // "ns" and "us" before "s", so that "500us" is not read as 500u seconds.
  return std::llround(parse_with_units(text, {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}}, "duration",
                                       "500us, 0.1ms or 0"));
}

std::uint32_t parse_ipv4(const std::string& text) {
  in_addr address{};
  if (inet_pton(AF_INET, text.c_str(), &address) != 1) {
    throw std::invalid_argument("'" + text + "' is not an IPv4 address (expected e.g. 10.78.0.1)");
  }
  return address.s_addr;
}

LinkSchedule::LinkSchedule(int hosts, LinkParameters link, Topology topology)
    : link_(link), topology_(topology), egress_free_at_(hosts, 0) {
  if (topology.hosts_per_node < 0) throw std::invalid_argument("hosts per node must be 0 (one level) or more");
  const int nodes = topology.hosts_per_node > 0 ? (hosts + topology.hosts_per_node - 1) / topology.hosts_per_node : 0;
  nic_out_free_at_.assign(nodes, 0);
  nic_in_free_at_.assign(nodes, 0);
}

Nanoseconds LinkSchedule::serialization(std::size_t bytes, const LinkParameters& link) {
  if (link.bits_per_second <= 0) return 0;
  return std::llround(static_cast<double>(bytes) * 8e9 / link.bits_per_second);
}

std::optional<Nanoseconds> LinkSchedule::arrival(int from, int to, std::size_t bytes, Nanoseconds now) {
  if (topology_.hosts_per_node > 0 && node_of(from) != node_of(to)) {
    return between_nodes(node_of(from), node_of(to), bytes, now);
  }
  Nanoseconds& free_at = egress_free_at_.at(from);
  const Nanoseconds start = std::max(now, free_at);
  if (start - now > link_.queue_limit) return std::nullopt;
  free_at = start + serialization(bytes);
  return free_at + link_.one_way_delay;
}

// Out through the source node's NIC; in through the destination's as the bits arrive (cut through),
// after the packets it is still receiving.
std::optional<Nanoseconds> LinkSchedule::between_nodes(int from_node, int to_node, std::size_t bytes, Nanoseconds now) {
  const LinkParameters& nic = topology_.between;
  const Nanoseconds wire = serialization(bytes, nic);
  Nanoseconds& out_free = nic_out_free_at_.at(from_node);
  const Nanoseconds start = std::max(now, out_free);
  if (start - now > nic.queue_limit) return std::nullopt;
  out_free = start + wire;
  Nanoseconds& in_free = nic_in_free_at_.at(to_node);
  const Nanoseconds in_start = std::max(start + nic.one_way_delay, in_free);
  if (in_start - (start + nic.one_way_delay) > nic.queue_limit) return std::nullopt;
  in_free = in_start + wire;
  return in_free;
}

int destination_node(const std::uint8_t* packet, std::size_t size, const std::vector<std::uint32_t>& node_addresses) {
  constexpr std::size_t kIpv4HeaderBytes = 20;
  if (size < kIpv4HeaderBytes || (packet[0] >> 4) != 4) return -1;
  std::uint32_t destination = 0;
  std::copy(packet + 16, packet + 20, reinterpret_cast<std::uint8_t*>(&destination));  // network order
  const auto found = std::find(node_addresses.begin(), node_addresses.end(), destination);
  return found == node_addresses.end() ? -1 : static_cast<int>(found - node_addresses.begin());
}

void DeliveryQueue::push(Nanoseconds arrival, int to, std::vector<std::uint8_t> bytes) {
  packets_.push(PacketInFlight{arrival, next_sequence_++, to, std::move(bytes)});
}

std::optional<PacketInFlight> DeliveryQueue::pop_arrived(Nanoseconds now) {
  if (packets_.empty() || packets_.top().arrival > now) return std::nullopt;
  PacketInFlight packet = packets_.top();
  packets_.pop();
  return packet;
}

}  // namespace sg2::tools
