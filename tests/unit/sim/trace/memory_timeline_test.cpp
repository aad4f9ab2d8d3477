// The memory timeline's change points (sim/trace/memory_timeline.h), from hand-written values.
#include "sim/trace/memory_timeline.h"

#include <initializer_list>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace mpsim::trace {
namespace {

MemoryPoint point_at_ns(std::int64_t time_ns, std::int64_t bytes) {
  return {static_cast<double>(time_ns) / 1e9, bytes};
}

/// The change points of the values (time in ns, bytes), set in this order.
std::vector<MemoryPoint> timeline_of(std::initializer_list<std::pair<std::int64_t, std::int64_t>> values) {
  MemoryTimelineBuilder b;
  for (const auto& [time_ns, bytes] : values) b.set(time_ns, bytes);
  return b.points();
}

TEST(MemoryTimelineBuilder, KeepsChangePointsOnly) {
  EXPECT_EQ(timeline_of({{0, 100}, {1'000, 100}, {2'000, 300}, {3'000, 300}, {4'000, 100}}),
            (std::vector{point_at_ns(0, 100), point_at_ns(2'000, 300), point_at_ns(4'000, 100)}));
}

TEST(MemoryTimelineBuilder, NothingSetNoPoints) { EXPECT_TRUE(timeline_of({}).empty()); }

// The step's first pass starts at 0 beside the static memory set there: the instant ends higher.
TEST(MemoryTimelineBuilder, AnInstantLeavesItsLastValue) {
  EXPECT_EQ(timeline_of({{0, 100}, {0, 300}, {7, 350}, {7, 400}}),
            (std::vector{point_at_ns(0, 300), point_at_ns(7, 400)}));
}

// An F&B pair that stashes its forward before its backward frees another's: the peak lasts no time
// but is the device's peak, so it stays, at the same time as the value after it.
TEST(MemoryTimelineBuilder, AnInstantsPeakStays) {
  EXPECT_EQ(timeline_of({{0, 100}, {5, 300}, {5, 200}}),
            (std::vector{point_at_ns(0, 100), point_at_ns(5, 300), point_at_ns(5, 200)}));
}

// Highs within an instant that the values around it reach anyway, and dips, add nothing.
TEST(MemoryTimelineBuilder, AnInstantsDipsAndLowerHighsGo) {
  EXPECT_EQ(timeline_of({{0, 300}, {5, 100}, {5, 300}}), (std::vector{point_at_ns(0, 300)}));
  EXPECT_EQ(timeline_of({{0, 300}, {5, 250}, {5, 200}}), (std::vector{point_at_ns(0, 300), point_at_ns(5, 200)}));
}

// points() closes the open instant on a copy: a later value at that time still joins it.
TEST(MemoryTimelineBuilder, PointsLeaveTheBuilderAsItWas) {
  MemoryTimelineBuilder b;
  b.set(0, 100);
  b.set(5, 300);
  EXPECT_EQ(b.points(), (std::vector{point_at_ns(0, 100), point_at_ns(5, 300)}));
  b.set(5, 100);
  EXPECT_EQ(b.points(), (std::vector{point_at_ns(0, 100), point_at_ns(5, 300), point_at_ns(5, 100)}));
}

}  // namespace
}  // namespace mpsim::trace
