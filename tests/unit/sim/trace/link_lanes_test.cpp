#include "sim/trace/link_lanes.h"

#include <gtest/gtest.h>

#include <string>

namespace mpsim::trace {
namespace {

/// Two op lanes and 40 link lanes; link i is busy for i + 1 ns.
Timeline many_links() {
  Timeline t;
  t.lanes.push_back({"node0", "gpu0 compute"});
  for (int i = 0; i < 40; ++i) t.lanes.push_back({"node0", "link" + std::to_string(i)});
  t.lanes.push_back({"node0", "gpu0 send"});
  t.spans.push_back({.lane = 0, .kind = SpanKind::Forward, .start_ns = 0, .end_ns = 10});
  for (int i = 0; i < 40; ++i) {
    t.spans.push_back({.lane = static_cast<std::uint32_t>(i + 1), .kind = SpanKind::Transfer, .start_ns = 0, .end_ns = i + 1});
  }
  t.spans.push_back({.lane = 41, .kind = SpanKind::Send, .start_ns = 10, .end_ns = 12});
  return t;
}

TEST(LinkLanes, BusiestKeepsTheLinksWithTheMostBusyTimeInTheirOrder) {
  const Timeline t = select_link_lanes(many_links(), LinkLanes::Busiest);
  ASSERT_EQ(t.lanes.size(), 2 + kBusiestLinks);
  EXPECT_EQ(t.lanes.front().thread, "gpu0 compute");
  EXPECT_EQ(t.lanes[1].thread, "link8");  // links 8..39 are the 32 busiest, in lane order
  EXPECT_EQ(t.lanes[kBusiestLinks].thread, "link39");
  EXPECT_EQ(t.lanes.back().thread, "gpu0 send");
  ASSERT_EQ(t.spans.size(), 2 + kBusiestLinks);
  EXPECT_EQ(t.spans.back().lane, kBusiestLinks + 1);  // renumbered
  EXPECT_EQ(t.spans[1].end_ns, 9);
}

TEST(LinkLanes, NoneAndAll) {
  const Timeline none = select_link_lanes(many_links(), LinkLanes::None);
  EXPECT_EQ(none.lanes.size(), 2u);
  EXPECT_EQ(none.spans.size(), 2u);
  EXPECT_EQ(none.spans[1].lane, 1u);
  const Timeline all = select_link_lanes(many_links(), LinkLanes::All);
  EXPECT_EQ(all.lanes.size(), 42u);
  EXPECT_EQ(all.spans.size(), 42u);
}

}  // namespace
}  // namespace mpsim::trace
