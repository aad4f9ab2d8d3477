// Memory over time (EngineOptions::record_memory_timeline): each device's timeline against closed
// forms from the cost model's own numbers, and against the device's peak on every kind of schedule.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine_test_support.h"
#include "sim/plan/layout.h"
#include "sim/trace/trace_json.h"

namespace mpsim::engine {
namespace {

using namespace testing;

EngineOptions with_memory_timeline() {
  EngineOptions options;
  options.record_memory_timeline = true;
  return options;
}

std::int64_t timeline_highest(const trace::DeviceReport& d) {
  std::int64_t highest = 0;
  for (const trace::MemoryPoint& p : d.memory_timeline) highest = std::max(highest, p.bytes);
  return highest;
}

struct InFlightCase {
  const char* schedule;
  int microbatches;
};

class FirstStageTimeline : public ::testing::TestWithParam<InFlightCase> {};

// Uniform stages of t_f = 3 ms, t_b = 6 ms on zero-cost links, 4 stages. The first stage runs its
// warm-up forwards back to back from time 0, each stashing one microbatch: 1F1B holds min(p, m)
// when its last warm-up forward starts, GPipe all m; the last backward, which ends the step, holds
// the last stash until it ends (working_memory.h: a backward frees its layer's stash once through).
// Expected values from the cost model: static memory + n x ChunkCost::stashed.
TEST_P(FirstStageTimeline, RisesToTheInFlightStashesAndFallsBackToStatic) {
  const auto [schedule, m] = GetParam();
  const int p = 4;
  const auto cluster = pcie_box(p);
  const auto model = timed_layers(p, "3 ms", "4 ms", "2 ms", 0, 1'000'000);
  const auto plan = pipeline_plan(p, m, schedule, cluster, model);
  const CostModel costs = build_cost_model(cluster, model, plan, plan::Layout(plan));
  const std::int64_t fixed = costs.ranks.front().static_memory.total().count();
  const std::int64_t stash = costs.chunk(0, 0).stashed.count();
  ASSERT_EQ(stash, 1'000'000);  // one layer per stage, its activation bytes

  const Prediction prediction = simulate(cluster, model, plan, with_memory_timeline());
  const trace::DeviceReport& first = prediction.report.devices.front();
  ASSERT_EQ(first.stage, 0);
  const int in_flight = std::string(schedule) == "gpipe" ? m : std::min(p, m);
  const auto peak = std::max_element(first.memory_timeline.begin(), first.memory_timeline.end(),
                                     [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  ASSERT_NE(peak, first.memory_timeline.end());
  EXPECT_EQ(peak->bytes, fixed + in_flight * stash);
  EXPECT_NEAR(peak->time_s, (in_flight - 1) * 3e-3, 1e-12);
  // From the first forward at 0, one more stash at each warm-up forward's start.
  for (int k = 0; k < in_flight; ++k) {
    const trace::MemoryPoint& rise = first.memory_timeline.at(static_cast<std::size_t>(k));
    EXPECT_NEAR(rise.time_s, k * 3e-3, 1e-12) << "forward " << k;
    EXPECT_EQ(rise.bytes, fixed + (k + 1) * stash) << "forward " << k;
  }
  EXPECT_EQ(first.memory_timeline.back().bytes, fixed);
  EXPECT_NEAR(first.memory_timeline.back().time_s, prediction.report.step_time_s, 1e-12);
  // The last stage has nothing to run before its first input arrives: it starts the step at its static memory.
  const trace::DeviceReport& last = prediction.report.devices.back();
  EXPECT_EQ(last.memory_timeline.front().time_s, 0.0);
  EXPECT_EQ(last.memory_timeline.front().bytes, costs.ranks.back().static_memory.total().count());
}

INSTANTIATE_TEST_SUITE_P(Schedules, FirstStageTimeline,
                         ::testing::Values(InFlightCase{"1f1b", 8}, InFlightCase{"1f1b", 2}, InFlightCase{"gpipe", 6}));

// Whatever the schedule (split backwards, V shapes, F&B pairs), the timeline's highest value is the
// device's peak, its times rise from 0 within the step, and no two neighbours repeat a value.
TEST(MemoryTimeline, HighestIsThePeakOnEverySchedule) {
  const int p = 4;
  const auto cluster = pcie_box(p);
  const auto model = timed_layers(2 * p, "3 ms", "4 ms", "2 ms", 1'000, 1'000'000);
  for (const std::string schedule : {"1f1b", "gpipe", "interleaved-1f1b", "zb-h1", "zb-h2", "zb-v", "dualpipev",
                                     "dualpipe"}) {
    const auto plan = plan_yaml(fmt::format("parallelism: {{ pipeline: {}, virtual_stages: {} }}\n"
                                            "batch: {{ microbatches: 8 }}\nschedule: {}\n",
                                            p, schedule == "interleaved-1f1b" ? 2 : 1, schedule),
                                cluster, model);
    const Prediction prediction = simulate(cluster, model, plan, with_memory_timeline());
    for (const trace::DeviceReport& d : prediction.report.devices) {
      ASSERT_FALSE(d.memory_timeline.empty()) << schedule << " " << d.id;
      EXPECT_EQ(timeline_highest(d), d.peak_memory_bytes) << schedule << " " << d.id;
      EXPECT_EQ(d.memory_timeline.front().time_s, 0.0) << schedule << " " << d.id;
      EXPECT_LE(d.memory_timeline.back().time_s, prediction.report.step_time_s) << schedule << " " << d.id;
      for (std::size_t i = 1; i < d.memory_timeline.size(); ++i) {
        EXPECT_LE(d.memory_timeline[i - 1].time_s, d.memory_timeline[i].time_s) << schedule << " " << d.id << " " << i;
        EXPECT_NE(d.memory_timeline[i - 1].bytes, d.memory_timeline[i].bytes) << schedule << " " << d.id << " " << i;
      }
    }
  }
}

// A shipped model and plan: every GPU's timeline peaks at its peak, and the JSON is the same bytes twice.
TEST(MemoryTimeline, ShippedPlanPeaksAtThePeakAndPrintsTheSameTwice) {
  const auto cluster = topology::load_topology_file(repo_path("topologies/4x-p4d.yaml"));
  const auto model = model::load_model_file(repo_path("configs/models/gpt3-13b.yaml"));
  const auto plan = plan_yaml("parallelism: { tensor: 8, pipeline: 2 }\nbatch: { global: 32, micro: 1 }\n", cluster, model);
  const Prediction once = simulate(cluster, model, plan, with_memory_timeline());
  for (const trace::DeviceReport& d : once.report.devices) {
    EXPECT_EQ(timeline_highest(d), d.peak_memory_bytes) << d.id;
  }
  const Prediction again = simulate(cluster, model, plan, with_memory_timeline());
  EXPECT_EQ(trace::report_json(once.report).dump(), trace::report_json(again.report).dump());
}

// Off by default: the planner's reports carry no timelines, and the rest of the report is unchanged.
TEST(MemoryTimeline, RecordedOnlyWhenAsked) {
  const auto cluster = pcie_box(2);
  const auto model = timed_layers(2, "3 ms", "4 ms", "2 ms", 0, 1'000'000);
  const auto plan = pipeline_plan(2, 4, "1f1b", cluster, model);
  Prediction plain = simulate(cluster, model, plan);
  const Prediction recorded = simulate(cluster, model, plan, with_memory_timeline());
  for (const trace::DeviceReport& d : plain.report.devices) EXPECT_TRUE(d.memory_timeline.empty()) << d.id;
  nlohmann::ordered_json without = trace::report_json(recorded.report);
  for (auto& d : without["devices"]) d.erase("memory_timeline");
  EXPECT_EQ(without.dump(), trace::report_json(plain.report).dump());
}

}  // namespace
}  // namespace mpsim::engine
