// The schedule traits table against what each generator does: the table's columns must describe the
// programs the generators give, and its words must name each schedule once.
#include "sim/plan/schedule_traits.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"

namespace mpsim::schedule {
namespace {

using plan::ChunkLayout;
using plan::ScheduleTraits;

/// A shape every schedule of the row accepts: 4 ranks, 16 microbatches, the chunks its layout holds.
PipelineShape shape_for(const ScheduleTraits& t) {
  PipelineShape s = testing::shape(t.kind, 4, 16, t.chunks == ChunkLayout::One ? 1 : 2);
  s.memory_limit = 4;
  return s;
}

bool has_op(const Program& program, OpKind kind) {
  return std::any_of(program.streams.begin(), program.streams.end(), [&](const std::vector<Op>& stream) {
    return std::any_of(stream.begin(), stream.end(), [&](const Op& op) { return op.kind == kind; });
  });
}

TEST(ScheduleTraits, ColumnsDescribeWhatEachGeneratorRuns) {
  for (const ScheduleTraits& t : plan::kScheduleTraits) {
    SCOPED_TRACE(std::string(t.name));
    const PipelineShape s = shape_for(t);
    ASSERT_FALSE(shape_error(s)) << *shape_error(s);
    const Program program = make_program(s);
    EXPECT_EQ(program.shape.kind, t.kind);
    EXPECT_EQ(has_op(program, OpKind::BackwardInput), t.splits_backward);
    EXPECT_EQ(has_op(program, OpKind::ForwardBackward), t.forward_backward_pairs);
    // One chunk per rank: a second one is refused; a V holds exactly two.
    PipelineShape more = s;
    more.chunks = 3;
    EXPECT_EQ(shape_error(more).has_value(), t.chunks != ChunkLayout::Looped);
  }
}

TEST(ScheduleTraits, TheFewestMicrobatchesIsTheShapeRule) {
  for (const ScheduleTraits& t : plan::kScheduleTraits) {
    SCOPED_TRACE(std::string(t.name));
    PipelineShape s = shape_for(t);
    s.microbatches = plan::minimum_microbatches(t.kind, s.stages);
    if (t.bidirectional) s.microbatches += s.microbatches % 2;
    EXPECT_FALSE(shape_error(s));
    if (t.microbatches_per_rank > 0) {
      s.microbatches -= t.bidirectional ? 2 : 1;
      EXPECT_TRUE(shape_error(s));
    }
  }
}

TEST(ScheduleTraits, OnlyBidirectionalSchedulesNeedAnEvenPipeline) {
  for (const ScheduleTraits& t : plan::kScheduleTraits) {
    if (t.chunks == ChunkLayout::Looped) continue;  // an interleaved pipeline's group rule needs p microbatches
    SCOPED_TRACE(std::string(t.name));
    PipelineShape s = shape_for(t);
    s.stages = 3;
    s.microbatches = 12;
    s.memory_limit = 3;
    s.active_microbatches = 5;
    EXPECT_EQ(shape_error(s).has_value(), t.bidirectional);
  }
}

TEST(ScheduleTraits, EveryWordNamesOneScheduleAndEachScheduleHasItsName) {
  std::set<std::string_view> words;
  for (const auto& [word, kind] : plan::kScheduleNames) {
    EXPECT_TRUE(words.insert(word).second) << word << " twice";
    const ScheduleTraits& t = plan::traits(kind);
    EXPECT_TRUE(word == t.name || word == t.alias) << word;
  }
  for (const ScheduleTraits& t : plan::kScheduleTraits) {
    EXPECT_EQ(plan::to_string(t.kind), t.name);
    EXPECT_TRUE(words.contains(t.name));
    if (!t.alias.empty()) {
      EXPECT_TRUE(words.contains(t.alias));
    }
  }
}

TEST(ScheduleTraits, FrameworkNamesAreGivenWhereTheFrameworkRunsThemByName) {
  std::set<std::string_view> torchtitan;
  for (const ScheduleTraits& t : plan::kScheduleTraits) {
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(t.torchtitan.empty(), t.torchtitan_run != plan::TorchTitanRun::ByName);
    if (!t.torchtitan.empty()) {
      EXPECT_TRUE(torchtitan.insert(t.torchtitan).second);
    }
    // A schedule that holds a stage twice cannot run where each stage is built once.
    if (t.bidirectional) {
      EXPECT_EQ(t.torchtitan_run, plan::TorchTitanRun::Never);
    }
  }
  const auto sagemaker = core::column_words<plan::kScheduleTraits, &ScheduleTraits::sagemaker>();
  ASSERT_EQ(sagemaker.size(), 2u);
  EXPECT_EQ(sagemaker[0].first, "simple");
  EXPECT_EQ(sagemaker[0].second, plan::ScheduleKind::GPipe);
  EXPECT_EQ(sagemaker[1].first, "interleaved");
  EXPECT_EQ(sagemaker[1].second, plan::ScheduleKind::SageMakerInterleaved);
}

}  // namespace
}  // namespace mpsim::schedule
