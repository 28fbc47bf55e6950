// The timing and routing of the emulated network (tools/link_emulator/link_schedule.h).
#include <gtest/gtest.h>

#include <stdexcept>

#include "link_schedule.h"

namespace sg2::tools {
namespace {

constexpr Nanoseconds kMillisecond = 1'000'000;

// A 1500-byte IPv4 header stub for `destination` (only the version and the address matter).
std::vector<std::uint8_t> ipv4_packet_to(const std::string& destination) {
  std::vector<std::uint8_t> packet(1500, 0);
  packet[0] = 0x45;
  const std::uint32_t address = parse_ipv4(destination);
  std::copy_n(reinterpret_cast<const std::uint8_t*>(&address), 4, packet.begin() + 16);
  return packet;
}

TEST(LinkSchedule, ParsesRatesAndDurationsAsTcWritesThem) {
  EXPECT_DOUBLE_EQ(parse_rate("1gbit"), 1e9);
  EXPECT_DOUBLE_EQ(parse_rate("200mbit"), 2e8);
  EXPECT_DOUBLE_EQ(parse_rate("64kbit"), 64e3);
  EXPECT_DOUBLE_EQ(parse_rate("2.5gbit"), 2.5e9);
  EXPECT_DOUBLE_EQ(parse_rate("none"), 0);
  EXPECT_EQ(parse_duration("500us"), 500'000);
  EXPECT_EQ(parse_duration("0.1ms"), 100'000);
  EXPECT_EQ(parse_duration("250ns"), 250);
  EXPECT_EQ(parse_duration("2s"), 2'000'000'000);
  EXPECT_EQ(parse_duration("0"), 0);
  for (const char* bad : {"", "fast", "1gbps", "-1gbit", "0gbit", "gbit", "1 gbit"}) {
    EXPECT_THROW(parse_rate(bad), std::invalid_argument) << bad;
  }
  for (const char* bad : {"", "5", "5 ms", "1h", "-1ms", "ms"}) EXPECT_THROW(parse_duration(bad), std::invalid_argument) << bad;
  try {
    parse_duration("5 parsecs");
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'5 parsecs' is not a duration"), std::string::npos) << error.what();
  }
  EXPECT_THROW(parse_ipv4("10.78.0"), std::invalid_argument);
}

TEST(LinkSchedule, EachPacketLeavesAfterTheOnesBeforeItThenTakesTheDelay) {
  // 1 Gbit/s: 1250 bytes take 10 us on the wire; one-way delay 1 ms.
  LinkSchedule schedule(2, LinkParameters{1e9, kMillisecond});
  EXPECT_EQ(schedule.serialization(1250), 10'000);
  EXPECT_EQ(schedule.arrival(0, 1, 1250, 0), 10'000 + kMillisecond);
  EXPECT_EQ(schedule.arrival(0, 1, 1250, 0), 20'000 + kMillisecond);    // queued behind the first
  EXPECT_EQ(schedule.arrival(0, 1, 1250, 5'000), 30'000 + kMillisecond);  // still behind
  EXPECT_EQ(schedule.arrival(1, 0, 1250, 0), 10'000 + kMillisecond);    // another node's egress is free
  EXPECT_EQ(schedule.arrival(0, 1, 1250, 100'000), 110'000 + kMillisecond);  // the egress was idle again
}

TEST(LinkSchedule, AnUnshapedLinkOnlyDelays) {
  LinkSchedule schedule(2, LinkParameters{0, 250'000});
  EXPECT_EQ(schedule.arrival(0, 1, 65536, 7), 250'007);
  EXPECT_EQ(schedule.arrival(0, 1, 65536, 7), 250'007);
}

TEST(LinkSchedule, ThePacketThatWouldWaitPastTheQueueLimitIsDropped) {
  // 8 Mbit/s: a 1000-byte packet occupies the egress 1 ms; the queue holds 2.5 ms of waiting.
  LinkSchedule schedule(1, LinkParameters{8e6, 0, 2'500'000});
  EXPECT_EQ(schedule.arrival(0, 1, 1000, 0), 1 * kMillisecond);  // waits 0 ms
  EXPECT_EQ(schedule.arrival(0, 1, 1000, 0), 2 * kMillisecond);  // waits 1 ms
  EXPECT_EQ(schedule.arrival(0, 1, 1000, 0), 3 * kMillisecond);  // waits 2 ms
  EXPECT_EQ(schedule.arrival(0, 1, 1000, 0), std::nullopt);      // would wait 3 ms
  EXPECT_EQ(schedule.arrival(0, 1, 1000, kMillisecond), 4 * kMillisecond);  // room again a millisecond later
}

TEST(LinkSchedule, TwoLevelsSendInsideANodeOnTheHostsLinksAndBetweenNodesThroughOneNicANode) {
  // 4 hosts, 2 a node. Inside: 1 Gbit/s (1250 bytes in 10 us), 1 ms. Between: 100 Mbit/s (100 us), 5 ms.
  LinkSchedule schedule(4, LinkParameters{1e9, kMillisecond}, Topology{2, LinkParameters{1e8, 5 * kMillisecond}});
  EXPECT_EQ(schedule.node_of(1), 0);
  EXPECT_EQ(schedule.node_of(2), 1);
  EXPECT_EQ(schedule.arrival(0, 1, 1250, 0), 10'000 + kMillisecond);  // host 0 to 1: inside node 0
  // Host 0 to node 1: its NIC sends 100 us, the bits arrive 5 ms after they leave (cut through).
  EXPECT_EQ(schedule.arrival(0, 2, 1250, 0), 100'000 + 5 * kMillisecond);
  // Host 1 shares node 0's NIC: behind host 0's packet; its own link (busy with nothing) does not count.
  EXPECT_EQ(schedule.arrival(1, 3, 1250, 0), 200'000 + 5 * kMillisecond);
  // Inside node 0 again: host 0's own link was free all along.
  EXPECT_EQ(schedule.arrival(0, 1, 1250, 20'000), 30'000 + kMillisecond);
  // Node 1 to node 0 uses the other direction of both NICs: nothing queued there.
  EXPECT_EQ(schedule.arrival(2, 0, 1250, 0), 100'000 + 5 * kMillisecond);
}

TEST(LinkSchedule, TwoNodesSendingToAThirdQueueAtItsNic) {
  // 3 nodes of 1 host, NICs at 100 Mbit/s (1250 bytes in 100 us), no delay, a hosts' link unshaped.
  LinkSchedule schedule(3, LinkParameters{0, 0}, Topology{1, LinkParameters{1e8, 0}});
  EXPECT_EQ(schedule.arrival(0, 2, 1250, 0), 100'000);
  EXPECT_EQ(schedule.arrival(1, 2, 1250, 0), 200'000);  // node 2's NIC receives one packet after the other
}

TEST(LinkSchedule, PacketsGoToTheNodeOfTheirIpv4Destination) {
  const std::vector<std::uint32_t> nodes{parse_ipv4("10.78.0.1"), parse_ipv4("10.78.0.2")};
  const auto to_second = ipv4_packet_to("10.78.0.2");
  EXPECT_EQ(destination_node(to_second.data(), to_second.size(), nodes), 1);
  const auto to_first = ipv4_packet_to("10.78.0.1");
  EXPECT_EQ(destination_node(to_first.data(), to_first.size(), nodes), 0);
  const auto elsewhere = ipv4_packet_to("10.78.0.3");
  EXPECT_EQ(destination_node(elsewhere.data(), elsewhere.size(), nodes), -1);
  auto ipv6 = to_second;
  ipv6[0] = 0x60;
  EXPECT_EQ(destination_node(ipv6.data(), ipv6.size(), nodes), -1);
  EXPECT_EQ(destination_node(to_second.data(), 19, nodes), -1);  // shorter than an IPv4 header
}

TEST(DeliveryQueue, HandsOutArrivedPacketsEarliestFirstAndTiesInSendingOrder) {
  DeliveryQueue queue;
  queue.push(30, 0, {3});
  queue.push(10, 1, {1});
  queue.push(30, 1, {4});
  queue.push(20, 0, {2});
  EXPECT_EQ(queue.next_arrival(), 10);
  EXPECT_EQ(queue.pop_arrived(9), std::nullopt);
  std::vector<std::uint8_t> order;
  while (auto packet = queue.pop_arrived(30)) order.push_back(packet->bytes.at(0));
  EXPECT_EQ(order, (std::vector<std::uint8_t>{1, 2, 3, 4}));
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace sg2::tools
