// Of plans within the ranking tolerance of the fastest, #1 is the one with the most memory headroom.
#include <gtest/gtest.h>

#include "planner/headroom_choice.h"

namespace mpsim::planner {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

/// A plan of id `id` on two 40 GiB GPUs whose peaks are `peaks_gib`.
Evaluated evaluated(std::size_t id, double step_s, std::vector<double> peaks_gib, int tensor = 8, int zero = 1) {
  Evaluated e;
  e.id = id;
  e.plan.degrees.set(plan::Axis::Tensor, tensor);
  e.plan.degrees.set(plan::Axis::Data, 4);
  e.plan.zero = zero;
  e.report.step_time_s = step_s;
  for (const double gib : peaks_gib) {
    trace::DeviceReport d;
    d.memory_capacity_bytes = 40 * kGiB;
    d.peak_memory_bytes = static_cast<std::int64_t>(gib * static_cast<double>(kGiB));
    e.report.peak_memory_bytes = std::max(e.report.peak_memory_bytes, d.peak_memory_bytes);
    e.report.devices.push_back(d);
  }
  return e;
}

TEST(HeadroomChoice, HeadroomIsTheLeastOverTheGpus) {
  EXPECT_EQ(memory_headroom(evaluated(1, 1.0, {10, 30}).report), 10 * kGiB);
  EXPECT_EQ(memory_headroom(evaluated(1, 1.0, {41}).report), -kGiB);
}

TEST(HeadroomChoice, MovingPartsCountWhatAPlanTurnsOn) {
  Evaluated e = evaluated(1, 1.0, {10}, 1, 0);
  EXPECT_EQ(moving_parts(e.plan), 0);  // data parallelism alone
  e.plan.degrees.set(plan::Axis::Pipeline, 2);
  e.plan.virtual_stages = 2;
  e.plan.recompute = plan::Recompute::Selective;
  e.plan.zero = 3;
  EXPECT_EQ(moving_parts(e.plan), 4);
  e.plan.degrees.set(plan::Axis::Tensor, 2);
  EXPECT_EQ(moving_parts(e.plan), 5);
}

TEST(HeadroomChoice, SafeMeansFittingAtTheWorstMeasuredUnderPrediction) {
  // 40 GiB x (1 - 0.209) = 31.64 GiB.
  EXPECT_TRUE(safe_from_worst_memory_error(evaluated(1, 1.0, {31.6}).report));
  EXPECT_FALSE(safe_from_worst_memory_error(evaluated(1, 1.0, {31.7}).report));
  EXPECT_FALSE(safe_from_worst_memory_error(evaluated(1, 1.0, {10, 32}).report));  // every GPU
}

// The README job's case: #1 at 36.2 GiB, #2 0.1 % slower at 18.4 GiB, #3 at 9 GiB 0.3 % slower: the
// fastest safe plan goes first, not the one with the most headroom.
TEST(HeadroomChoice, TheFastestSafePlanWithinToleranceGoesFirst) {
  const std::vector<Evaluated> ranked{evaluated(1, 7.29, {36.2}), evaluated(2, 7.30, {18.4}), evaluated(3, 7.31, {9}),
                                      evaluated(4, 7.7, {5})};
  const auto choice = choose_for_headroom(ranked, {}, 0.043);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->chosen.id, 2u);
  EXPECT_EQ(choice->fastest.id, 1u);
  EXPECT_EQ(choice->within, 3u);  // 7.7 s is 5.6 % slower: outside
  std::vector<Evaluated> reordered = ranked;
  put_first(reordered, *choice);
  ASSERT_EQ(reordered.size(), 4u);
  EXPECT_EQ(reordered[0].id, 2u);
  EXPECT_EQ(reordered[1].id, 1u);
  EXPECT_EQ(reordered[2].id, 3u);
}

// Of safe plans with the same step, the one with the most headroom; of equal headroom, fewer moving parts.
TEST(HeadroomChoice, EqualStepsPreferHeadroomThenFewerMovingParts) {
  EXPECT_EQ(choose_for_headroom({evaluated(1, 10.0, {28}), evaluated(2, 10.0, {20})}, {}, 0.01)->chosen.id, 2u);
  const std::vector<Evaluated> ranked{evaluated(1, 10.0, {35}), evaluated(2, 10.05, {20}, 8, 3),
                                      evaluated(3, 10.05, {20}, 1, 3)};
  EXPECT_EQ(choose_for_headroom(ranked, {}, 0.01)->chosen.id, 3u);
}

// Headrooms within 1 % of the GPU's memory of each other (0.4 GiB of 40) are equal: fewer moving parts,
// then the faster, decide; a difference beyond it still orders them.
TEST(HeadroomChoice, MoreHeadroomMeansMoreThanOnePercentOfTheMemory) {
  // 40 GiB GPUs: 0.4 GiB is 1 %.
  EXPECT_FALSE(has_more_headroom(evaluated(1, 1.0, {20.0}).report, evaluated(2, 1.0, {20.3}).report));
  EXPECT_FALSE(has_more_headroom(evaluated(1, 1.0, {20.3}).report, evaluated(2, 1.0, {20.0}).report));
  EXPECT_TRUE(has_more_headroom(evaluated(1, 1.0, {20.0}).report, evaluated(2, 1.0, {20.5}).report));
  EXPECT_FALSE(has_more_headroom(evaluated(1, 1.0, {20.5}).report, evaluated(2, 1.0, {20.0}).report));
}

TEST(HeadroomChoice, HeadroomWithinOnePercentOfMemoryIsEqual) {
  // 2 holds 0.3 GiB less but has a ZeRO stage more than 3 (tensor 8 and ZeRO 3 against tensor 8 alone).
  const std::vector<Evaluated> close{evaluated(1, 10.0, {20.3}, 8, 3), evaluated(2, 10.005, {20.0}, 8, 3),
                                     evaluated(3, 10.005, {20.3}, 8, 0)};
  EXPECT_EQ(choose_for_headroom(close, {}, 0.01)->chosen.id, 3u);
  // Both 1 and 2 of the same parts: the faster, 1, stays.
  EXPECT_FALSE(choose_for_headroom({close[0], close[1]}, {}, 0.01).has_value());
  // 0.5 GiB apart is beyond 0.4 GiB: the one with more headroom goes first.
  EXPECT_EQ(choose_for_headroom({evaluated(1, 10.0, {20.5}, 8, 0), evaluated(2, 10.005, {20.0}, 8, 3)}, {}, 0.01)->chosen.id,
            2u);
}

// When none is safe, the most headroom.
TEST(HeadroomChoice, WithNoSafePlanTheMostHeadroom) {
  const std::vector<Evaluated> ranked{evaluated(1, 10.0, {38}), evaluated(2, 10.2, {35}), evaluated(3, 10.3, {36})};
  EXPECT_EQ(choose_for_headroom(ranked, {}, 0.05)->chosen.id, 2u);
  EXPECT_FALSE(choose_for_headroom(ranked, {}, 0.01).has_value());  // 2 is 2 % slower: outside
}

TEST(HeadroomChoice, TheFastestStaysWhenSafeOrToleranceIsZero) {
  const std::vector<Evaluated> ranked{evaluated(1, 10.0, {12}), evaluated(2, 10.1, {5})};
  EXPECT_FALSE(choose_for_headroom(ranked, {}, 0.05).has_value());
  const std::vector<Evaluated> unsafe_first{evaluated(1, 10.0, {36}), evaluated(2, 10.1, {5})};
  EXPECT_FALSE(choose_for_headroom(unsafe_first, {}, 0.0).has_value());
  EXPECT_FALSE(choose_for_headroom({}, {}, 0.05).has_value());
  EXPECT_EQ(choose_for_headroom(unsafe_first, {}, 0.05)->chosen.id, 2u);
}

// A plan of the Pareto front that the top K did not hold can win; it goes in front and the count stays.
TEST(HeadroomChoice, AFrontPlanOutsideTheTopIsConsidered) {
  const std::vector<Evaluated> ranked{evaluated(1, 7.29, {36.2}), evaluated(2, 7.30, {33})};
  const std::vector<Evaluated> front{evaluated(9, 7.37, {16.9}), evaluated(1, 7.29, {36.2}), evaluated(8, 8.0, {9})};
  const auto choice = choose_for_headroom(ranked, front, 0.018);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->chosen.id, 9u);
  EXPECT_EQ(choice->within, 3u);  // ids 1, 2, 9; id 1 counted once
  std::vector<Evaluated> reordered = ranked;
  put_first(reordered, *choice);
  ASSERT_EQ(reordered.size(), 2u);
  EXPECT_EQ(reordered[0].id, 9u);
  EXPECT_EQ(reordered[1].id, 1u);
}

}  // namespace
}  // namespace mpsim::planner
