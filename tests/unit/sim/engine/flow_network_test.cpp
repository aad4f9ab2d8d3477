#include "sim/engine/flow_network.h"

#include <gtest/gtest.h>

#include "engine_test_support.h"

namespace mpsim::engine {
namespace {

using testing::pcie_box;

std::vector<Usage> usage_between(const topology::Cluster& c, const char* a, const char* b) {
  std::vector<Usage> usage;
  add_route_usage(c, *topology::find_route(c, *c.find(a), *c.find(b)), usage);
  return usage;
}

// One 1 GB transfer alone on a 10 GB/s path: 100 ms.
TEST(FlowNetwork, OneFlowTakesBytesOverBandwidth) {
  const auto c = pcie_box(4);
  FlowNetwork net(c);
  const auto changed = net.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu1"), Bytes::gb(1));
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(net.completion(changed[0]), TimeNs::ms(100));
}

// Two equal flows sharing a link direction each take twice as long.
TEST(FlowNetwork, TwoEqualFlowsOnOneLinkTakeTwiceAsLong) {
  const auto c = pcie_box(4);
  FlowNetwork net(c);
  const auto first = net.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu1"), Bytes::gb(1)).front();
  const auto second = net.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu2"), Bytes::gb(1));
  EXPECT_EQ(net.completion(first), TimeNs::ms(200));
  EXPECT_EQ(net.completion(second.back()), TimeNs::ms(200));
  // Opposite directions of a full-duplex link do not share.
  FlowNetwork duplex(c);
  const auto ab = duplex.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu1"), Bytes::gb(1)).front();
  const auto ba = duplex.start(TimeNs{}, usage_between(c, "node0/gpu1", "node0/gpu0"), Bytes::gb(1)).front();
  EXPECT_EQ(duplex.completion(ab), TimeNs::ms(100));
  EXPECT_EQ(duplex.completion(ba), TimeNs::ms(100));
}

// A rate cap (a collective's achievable bandwidth) binds like a link of its own: 1 GB capped at 4 GB/s
// on a 10 GB/s path takes 250 ms alone; beside an uncapped 1 GB flow on the same link, max-min gives the
// capped flow its 4 GB/s and the other the remaining 6 GB/s (1 GB in 166,666,667 ns, rounded up).
TEST(FlowNetwork, ACappedFlowLeavesTheRestOfTheLinkToOthers) {
  const auto c = pcie_box(4);
  const auto a = usage_between(c, "node0/gpu0", "node0/gpu1");
  const auto b = usage_between(c, "node0/gpu0", "node0/gpu2");
  FlowNetwork alone(c);
  const auto capped = alone.start(TimeNs{}, std::span<const Usage>(a), Bytes::gb(1), BytesPerSec::gigabytes_per_sec(4));
  EXPECT_EQ(alone.completion(capped.front()), TimeNs::ms(250));
  FlowNetwork shared(c);
  const auto first = shared.start(TimeNs{}, std::span<const Usage>(a), Bytes::gb(1), BytesPerSec::gigabytes_per_sec(4)).front();
  const auto second = shared.start(TimeNs{}, std::span<const Usage>(b), Bytes::gb(1)).back();
  EXPECT_EQ(shared.completion(first), TimeNs::ms(250));
  EXPECT_EQ(shared.completion(second), TimeNs::ns(166'666'667));
}

// When one of two sharing flows ends, the other speeds up: 1 GB and 0.5 GB together on 10 GB/s:
// both at 5 GB/s until 100 ms (the small one ends), then the rest 0.5 GB at 10 GB/s: ends at 150 ms.
TEST(FlowNetwork, RatesAreRecomputedWhenAFlowEnds) {
  const auto c = pcie_box(4);
  FlowNetwork net(c);
  const auto big = net.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu1"), Bytes::gb(1)).front();
  const auto small = net.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu2"), Bytes::mb(500)).back();
  EXPECT_EQ(net.completion(small), TimeNs::ms(100));
  const auto changed = net.finish(net.completion(small), small);
  ASSERT_EQ(changed, std::vector<FlowNetwork::FlowId>{big});
  EXPECT_EQ(net.completion(big), TimeNs::ms(150));
}

// Max-min: a flow bottlenecked elsewhere leaves the rest of a shared link to the others.
TEST(FlowNetwork, MaxMinFairness) {
  // gpu0 -> gpu1 at 10 GB/s, and three flows into gpu2 over its link: each gets a third.
  const auto c = pcie_box(4);
  FlowNetwork net(c);
  const auto a = net.start(TimeNs{}, usage_between(c, "node0/gpu1", "node0/gpu2"), Bytes::gb(1)).front();
  (void)net.start(TimeNs{}, usage_between(c, "node0/gpu3", "node0/gpu2"), Bytes::gb(1));
  const auto b = net.start(TimeNs{}, usage_between(c, "node0/gpu0", "node0/gpu2"), Bytes::gb(1)).back();
  EXPECT_EQ(net.completion(a), net.completion(b));
  EXPECT_EQ(net.completion(b), TimeNs::ns(300'000'000));
}

// A flow standing for 4 identical transfers over one link direction moves at a quarter of the link.
TEST(FlowNetwork, MultiplicityCountsEveryTransfer) {
  const auto c = pcie_box(4);
  FlowNetwork net(c);
  auto usage = usage_between(c, "node0/gpu0", "node0/gpu1");
  for (auto& u : usage) u.count = 4;
  const auto f = net.start(TimeNs{}, usage, Bytes::gb(1)).front();
  EXPECT_EQ(net.completion(f), TimeNs::ms(400));
}

}  // namespace
}  // namespace mpsim::engine
