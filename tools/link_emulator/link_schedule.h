#pragma once
// The timing and routing of the emulated network of scripts/bench/netns_cluster.sh: every host has
// one full-duplex link to a switch; its egress sends at a fixed rate, one packet after the other,
// and each packet reaches its destination a fixed one-way delay after its last bit left. A packet
// that would wait longer than the queue limit behind the ones already queued is dropped (a tail-drop
// queue, as tc's tbf with "latency"). Pure arithmetic, no I/O: link_emulator.cpp does the I/O.
//
// Two levels (Topology::hosts_per_node > 0), as GPUs in nodes: hosts i and j share a node when
// i / hosts_per_node == j / hosts_per_node, and talk over their own links as above. Between nodes a
// packet leaves through its node's NIC and enters through the destination node's (each full duplex at
// the topology's rate, shared by the node's hosts), cut through a non-blocking switch: it arrives the
// topology's delay after its last bit left, later only when the destination's NIC is still busy.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <queue>
#include <string>
#include <vector>

namespace sg2::tools {

using Nanoseconds = std::int64_t;

struct LinkParameters {
  double bits_per_second = 0;             // 0: unshaped (no serialization time)
  Nanoseconds one_way_delay = 0;          // added to every packet, in each direction
  Nanoseconds queue_limit = 200'000'000;  // the longest a packet may wait for its egress
};

// "1gbit", "200mbit", "25gbit", "64kbit", "1000bit" (decimal, as tc) or "none" (0): bits per second.
double parse_rate(const std::string& text);
// "500us", "0.1ms", "1ms", "250ns", "0.002s" or "0": nanoseconds.
Nanoseconds parse_duration(const std::string& text);
// A dotted IPv4 address ("10.78.0.1") in network byte order.
std::uint32_t parse_ipv4(const std::string& text);

struct Topology {
  int hosts_per_node = 0;  // 0: one level (every host on the switch)
  LinkParameters between;  // the nodes' NICs: rate, one-way delay and queue limit between nodes
};

// When each packet arrives, given when it was sent and its host's (and node's) earlier packets.
class LinkSchedule {
 public:
  LinkSchedule(int hosts, LinkParameters link, Topology topology = {});

  // The arrival time of `bytes` sent by host `from` to host `to` at `now`, or nothing when a queue
  // drops it.
  std::optional<Nanoseconds> arrival(int from, int to, std::size_t bytes, Nanoseconds now);
  Nanoseconds serialization(std::size_t bytes) const { return serialization(bytes, link_); }
  static Nanoseconds serialization(std::size_t bytes, const LinkParameters& link);
  int node_of(int host) const { return topology_.hosts_per_node > 0 ? host / topology_.hosts_per_node : host; }

 private:
  std::optional<Nanoseconds> between_nodes(int from_node, int to_node, std::size_t bytes, Nanoseconds now);
  LinkParameters link_;
  Topology topology_;
  std::vector<Nanoseconds> egress_free_at_;       // [host]: when its last queued packet has left
  std::vector<Nanoseconds> nic_out_free_at_;      // [node]: when its NIC has sent its last packet
  std::vector<Nanoseconds> nic_in_free_at_;       // [node]: when its NIC has received its last packet
};

// The node an IPv4 packet is for (node_addresses[node], network byte order), or -1 when the packet
// is not IPv4 or its destination is no node's.
int destination_node(const std::uint8_t* packet, std::size_t size, const std::vector<std::uint32_t>& node_addresses);

struct PacketInFlight {
  Nanoseconds arrival = 0;
  std::uint64_t sequence = 0;  // ties in arrival keep the order of sending
  int to = -1;
  std::vector<std::uint8_t> bytes;
};

// Packets in flight, earliest arrival first.
class DeliveryQueue {
 public:
  void push(Nanoseconds arrival, int to, std::vector<std::uint8_t> bytes);
  bool empty() const { return packets_.empty(); }
  Nanoseconds next_arrival() const { return packets_.top().arrival; }
  // The earliest packet, when it has arrived by `now`.
  std::optional<PacketInFlight> pop_arrived(Nanoseconds now);

 private:
  struct LaterFirst {
    bool operator()(const PacketInFlight& a, const PacketInFlight& b) const {
      return a.arrival != b.arrival ? a.arrival > b.arrival : a.sequence > b.sequence;
    }
  };
  std::priority_queue<PacketInFlight, std::vector<PacketInFlight>, LaterFirst> packets_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace sg2::tools
