// Plans that differ only in placement (or, with one pipeline stage, in the schedule's name) and simulate
// to the same step are one row of a ranking.
#include <gtest/gtest.h>

#include "planner/equivalent_plans.h"

namespace mpsim::planner {
namespace {

Evaluated evaluated(plan::Placement placement, double step_s, std::int64_t peak = 1000, int zero = 1) {
  Evaluated e;
  e.plan.degrees.set(plan::Axis::Tensor, 8);
  e.plan.degrees.set(plan::Axis::Pipeline, 2);
  e.plan.degrees.set(plan::Axis::Data, 64);
  e.plan.zero = zero;
  e.plan.placement = std::move(placement);
  e.report.step_time_s = step_s;
  e.report.peak_memory_bytes = peak;
  e.report.bubble_fraction = 0.02;
  return e;
}

const plan::Placement kTpDpPp{plan::Axis::Tensor, plan::Axis::Data, plan::Axis::Pipeline};
const plan::Placement kTpPpDp{plan::Axis::Tensor, plan::Axis::Pipeline, plan::Axis::Data};

TEST(EquivalentPlans, OnlyAnotherPlacementWithTheSameStepIsTheSamePlan) {
  EXPECT_TRUE(equivalent(evaluated(kTpDpPp, 17.4), evaluated(kTpPpDp, 17.4)));
  // GPT-3 175B on 1024 A100's top two: 0.1 ms apart in 17.36 s.
  EXPECT_TRUE(equivalent(evaluated(kTpPpDp, 17.364533755), evaluated(kTpDpPp, 17.364644155)));
  EXPECT_TRUE(equivalent(evaluated(kTpDpPp, 10.0), evaluated(kTpPpDp, 10.0 * (1 + kEquivalentStepShare) - 1e-9)));
  EXPECT_FALSE(equivalent(evaluated(kTpDpPp, 10.0), evaluated(kTpPpDp, 10.0 * (1 + 2 * kEquivalentStepShare))));
  EXPECT_FALSE(equivalent(evaluated(kTpDpPp, 17.4), evaluated(kTpPpDp, 17.4, 1001)));    // another peak
  EXPECT_FALSE(equivalent(evaluated(kTpDpPp, 17.4), evaluated(kTpPpDp, 17.4, 1000, 2)));  // another plan
}

TEST(EquivalentPlans, MergingKeepsTheRankingOrderAndListsThePlacements) {
  const std::vector<Evaluated> ranked{evaluated(kTpPpDp, 17.4), evaluated(kTpDpPp, 17.4001),
                                      evaluated(kTpPpDp, 17.5, 1000, 2), evaluated(kTpDpPp, 17.6, 1000, 2)};
  const std::vector<EquivalentPlans> merged = merge_equivalent(ranked);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(placements_text(merged[0]), "tp-pp-dp / tp-dp-pp");
  EXPECT_EQ(merged[0].plan.report.step_time_s, 17.4);
  EXPECT_EQ(placements_text(merged[1]), "tp-pp-dp");
  EXPECT_EQ(merged[2].plan.report.step_time_s, 17.6);
}

// With one pipeline stage every schedule runs the same forward-backward loop: only the name differs, and
// the row lists the names; with two stages the schedule is a real difference.
TEST(EquivalentPlans, OneStageScheduleNamesAreOnePlan) {
  const auto with = [](int pipeline, plan::ScheduleKind kind) {
    Evaluated e = evaluated(kTpDpPp, 12.0);
    e.plan.degrees.set(plan::Axis::Pipeline, pipeline);
    e.plan.schedule = kind;
    return e;
  };
  EXPECT_TRUE(equivalent(with(1, plan::ScheduleKind::OneFOneB), with(1, plan::ScheduleKind::SageMakerInterleaved)));
  EXPECT_FALSE(equivalent(with(2, plan::ScheduleKind::OneFOneB), with(2, plan::ScheduleKind::ZbH1)));
  const std::vector<EquivalentPlans> merged = merge_equivalent(
      {with(1, plan::ScheduleKind::OneFOneB), with(1, plan::ScheduleKind::ZbH1), with(1, plan::ScheduleKind::ZbH1)});
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(schedules_text(merged[0]), "1f1b / zb-h1");
  EXPECT_EQ(placements_text(merged[0]), "tp-dp-pp");  // each once
}

}  // namespace
}  // namespace mpsim::planner
