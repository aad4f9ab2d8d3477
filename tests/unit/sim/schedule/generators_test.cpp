#include "sim/schedule/generators.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "schedule_test_support.h"
#include "sim/schedule/validate.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;
using testing::rank_text;
using testing::shape;

TEST(GPipe, AllForwardsThenAllBackwardsInOrder) {
  const Program p = make_gpipe(shape(ScheduleKind::GPipe, 3, 3));
  EXPECT_EQ(to_text(p), "F0 F1 F2 B0 B1 B2\nF0 F1 F2 B0 B1 B2\nF0 F1 F2 B0 B1 B2\n");
  EXPECT_EQ(p.shape.kind, ScheduleKind::GPipe);
}

TEST(OneFOneB, ReferenceExample) {  // schedules.md A.2, p = 4, m = 6
  const Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 4, 6));
  EXPECT_EQ(rank_text(p, 0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(rank_text(p, 1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
  EXPECT_EQ(rank_text(p, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5");
}

TEST(OneFOneB, FewerMicrobatchesThanStagesCapsTheWarmUp) {
  const Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 4, 2));
  EXPECT_EQ(to_text(p), "F0 F1 B0 B1\nF0 F1 B0 B1\nF0 F1 B0 B1\nF0 B0 F1 B1\n");
  EXPECT_EQ(to_text(make_1f1b(shape(ScheduleKind::OneFOneB, 1, 3))), "F0 B0 F1 B1 F2 B2\n");
}

TEST(Interleaved, VirtualMicrobatchTableReferenceExample) {  // PP = 2, N = 3, M = 5, VP = 2
  const std::vector<VirtualMicrobatch> table = virtual_microbatch_table(5, 2, 3);
  std::vector<int> mb;
  std::vector<int> chunk;
  for (const VirtualMicrobatch& e : table) {
    mb.push_back(e.microbatch);
    chunk.push_back(e.chunk);
  }
  EXPECT_EQ(mb, (std::vector<int>{0, 1, 2, 0, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(chunk, (std::vector<int>{0, 0, 0, 1, 1, 1, 0, 0, 1, 1}));
}

TEST(Interleaved, TableGroupsAreDepthFirstPerGroup) {
  const std::vector<VirtualMicrobatch> t = virtual_microbatch_table(4, 3, 2);
  const std::vector<VirtualMicrobatch> want{{0, 0}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2},
                                            {2, 0}, {3, 0}, {2, 1}, {3, 1}, {2, 2}, {3, 2}};
  EXPECT_EQ(t, want);
  // A group larger than m takes every microbatch: breadth first.
  EXPECT_EQ(virtual_microbatch_table(2, 2, 8), (std::vector<VirtualMicrobatch>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}));
  EXPECT_THROW((void)virtual_microbatch_table(2, 2, 0), std::invalid_argument);
}

TEST(Interleaved, RemainderGroupExample) {  // p = 2, m = 5, v = 2, N = 3: warm-up 5 on rank 0, 3 on rank 1
  const Program p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 5, 2, 3));
  EXPECT_EQ(rank_text(p, 0),
            "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 B0.1 F3.0 B1.1 F4.0 B2.1 F3.1 B0.0 F4.1 B1.0 B2.0 B3.1 B4.1 B3.0 B4.0");
  EXPECT_EQ(rank_text(p, 1),
            "F0.0 F1.0 F2.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.0 B0.0 F4.0 B1.0 F3.1 B2.0 F4.1 B3.1 B4.1 B3.0 B4.0");
}

TEST(Interleaved, WarmUpFollowsMegatron) {
  // p = 4, v = 2, N = 4, m = 8: rank i warms up with (p - i - 1) * 2 + (v - 1) * N forwards.
  const Program p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 4, 8, 2, 4));
  for (int rank = 0; rank < 4; ++rank) {
    const std::vector<Op>& s = p.streams[static_cast<std::size_t>(rank)];
    std::size_t first_backward = 0;
    while (s[first_backward].kind == OpKind::Forward) ++first_backward;
    EXPECT_EQ(first_backward, static_cast<std::size_t>((4 - rank - 1) * 2 + 4 + 1)) << "rank " << rank;
    EXPECT_EQ(to_text(s[first_backward], true), "B0.1");
  }
}

TEST(Interleaved, AllWarmUpDegeneratesToForwardsThenBackwards) {
  const Program p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 4, 2, 2, 4));
  EXPECT_EQ(rank_text(p, 0), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
  EXPECT_EQ(rank_text(p, 3), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");  // w = 4 = m * v
}

TEST(Interleaved, OneRankRunsItsChunksInDependencyOrder) {
  const Program p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 1, 2, 2, 1));
  EXPECT_EQ(to_text(p), "F0.0 F0.1 B0.1 F1.0 B0.0 F1.1 B1.1 B1.0\n");
}

TEST(ZbH1, ReferenceOrder) {  // schedules.md A.4
  const Program p = make_zb_h1(shape(ScheduleKind::ZbH1, 4, 8));
  EXPECT_EQ(rank_text(p, 0), "F0 F1 F2 F3 I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 W5 I6 W6 I7 W7");
  EXPECT_EQ(rank_text(p, 1), "F0 F1 F2 I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7");
  EXPECT_EQ(rank_text(p, 3), "F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7");
}

TEST(ZbH1, MoreStagesThanMicrobatchesDefersEveryW) {
  const Program p = make_zb_h1(shape(ScheduleKind::ZbH1, 4, 2));
  EXPECT_EQ(rank_text(p, 0), "F0 F1 I0 W0 I1 W1");
  EXPECT_EQ(rank_text(p, 3), "F0 I0 F1 I1 W0 W1");
}

TEST(ZbH2, ReferenceOrder) {  // schedules.md A.4
  const Program p = make_zb_h2(shape(ScheduleKind::ZbH2, 4, 8));
  EXPECT_EQ(rank_text(p, 0), "F0 F1 F2 F3 F4 F5 F6 I0 W0 F7 I1 W1 I2 W2 I3 W3 I4 W4 I5 W5 I6 W6 I7 W7");
  EXPECT_EQ(rank_text(p, 1), "F0 F1 F2 F3 F4 I0 F5 I1 F6 I2 W0 F7 I3 W1 I4 W2 I5 W3 I6 W4 I7 W5 W6 W7");
  EXPECT_EQ(rank_text(p, 3), "F0 I0 F1 I1 F2 I2 F3 I3 F4 I4 F5 I5 F6 I6 W0 F7 I7 W1 W2 W3 W4 W5 W6 W7");
}

TEST(SageMaker, LastRankAlternatesAndFirstRankFillsToTheCap) {
  const Program p = make_sagemaker_interleaved(shape(ScheduleKind::SageMakerInterleaved, 4, 8, 1, 0, 6));
  EXPECT_EQ(rank_text(p, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  EXPECT_EQ(rank_text(p, 0).substr(0, 20), "F0 F1 F2 F3 F4 F5 B0");
}

TEST(SageMaker, CapOfPGivesOneFOneBOnTheFirstRank) {
  for (const int m : {4, 8, 13}) {
    const Program sm = make_sagemaker_interleaved(shape(ScheduleKind::SageMakerInterleaved, 4, m, 1, 0, 4));
    const Program ofob = make_1f1b(shape(ScheduleKind::OneFOneB, 4, m));
    EXPECT_EQ(rank_text(sm, 0), rank_text(ofob, 0)) << "m = " << m;
    EXPECT_EQ(rank_text(sm, 3), rank_text(ofob, 3)) << "m = " << m;
  }
}

TEST(SageMaker, CapOfOneRunsOneMicrobatchAtATime) {
  const Program p = make_sagemaker_interleaved(shape(ScheduleKind::SageMakerInterleaved, 3, 3, 1, 0, 1));
  EXPECT_EQ(to_text(p), "F0 B0 F1 B1 F2 B2\nF0 B0 F1 B1 F2 B2\nF0 B0 F1 B1 F2 B2\n");
}

TEST(MakeProgram, DispatchesOnTheKind) {
  EXPECT_EQ(make_program(shape(ScheduleKind::GPipe, 3, 5)), make_gpipe(shape(ScheduleKind::GPipe, 3, 5)));
  EXPECT_EQ(make_program(shape(ScheduleKind::OneFOneB, 3, 5)), make_1f1b(shape(ScheduleKind::OneFOneB, 3, 5)));
  EXPECT_EQ(make_program(shape(ScheduleKind::Interleaved1F1B, 3, 6, 2)),
            make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 3, 6, 2)));
  EXPECT_EQ(make_program(shape(ScheduleKind::ZbH1, 3, 5)), make_zb_h1(shape(ScheduleKind::ZbH1, 3, 5)));
  EXPECT_EQ(make_program(shape(ScheduleKind::ZbH2, 3, 5)), make_zb_h2(shape(ScheduleKind::ZbH2, 3, 5)));
  EXPECT_EQ(make_program(shape(ScheduleKind::SageMakerInterleaved, 3, 5)),
            make_sagemaker_interleaved(shape(ScheduleKind::SageMakerInterleaved, 3, 5)));
}

TEST(MakeProgram, GeneratorsRecordTheirOwnKind) {
  const Program p = make_zb_h2(shape(ScheduleKind::OneFOneB, 2, 2));
  EXPECT_EQ(p.shape.kind, ScheduleKind::ZbH2);
}

TEST(ShapeError, RejectsWhatNoScheduleCanRun) {
  EXPECT_FALSE(shape_error(shape(ScheduleKind::OneFOneB, 4, 8)));
  EXPECT_EQ(shape_error(shape(ScheduleKind::OneFOneB, 0, 8)), "a pipeline needs at least 1 stage, not 0");
  EXPECT_EQ(shape_error(shape(ScheduleKind::GPipe, 2, 0)), "a step needs at least 1 microbatch, not 0");
  EXPECT_EQ(shape_error(shape(ScheduleKind::Interleaved1F1B, 2, 2, 0)), "a rank holds at least 1 chunk, not 0");
  EXPECT_EQ(shape_error(shape(ScheduleKind::OneFOneB, 2, 4, 2)),
            "2 chunks per rank need schedule interleaved-1f1b or a V schedule, not 1f1b");
  EXPECT_EQ(shape_error(shape(ScheduleKind::ZbH1, 2, 4, 3)),
            "3 chunks per rank need schedule interleaved-1f1b or a V schedule, not zb-h1");
  PipelineShape s = shape(ScheduleKind::Interleaved1F1B, 2, 4, 2);
  s.microbatch_group_size = 0;
  EXPECT_EQ(shape_error(s), "interleaved-1f1b needs a microbatch group size of at least 1, not 0");
  EXPECT_EQ(
      shape_error(shape(ScheduleKind::Interleaved1F1B, 4, 8, 2, 2)),
      "interleaved-1f1b needs a microbatch group size of at least the pipeline size 4 (or of all 8 microbatches), "
      "not 2: smaller groups deadlock");
  EXPECT_EQ(shape_error(shape(ScheduleKind::Interleaved1F1B, 4, 9, 3, 4)),
            "interleaved-1f1b: 9 microbatches in groups of 4 leave a last group of 1, fewer than the pipeline size 4: "
            "it deadlocks");
  s = shape(ScheduleKind::SageMakerInterleaved, 2, 4);
  s.active_microbatches = 0;
  EXPECT_EQ(shape_error(s), "sagemaker-interleaved needs at least 1 active microbatch, not 0");
  // Megatron's rules, plus one group of every microbatch (how m < p runs).
  EXPECT_FALSE(shape_error(shape(ScheduleKind::Interleaved1F1B, 4, 8, 2, 4)));
  EXPECT_FALSE(shape_error(shape(ScheduleKind::Interleaved1F1B, 2, 5, 2, 3)));  // last group 2 >= p
  EXPECT_FALSE(shape_error(shape(ScheduleKind::Interleaved1F1B, 4, 3, 2, 3)));
  EXPECT_FALSE(shape_error(shape(ScheduleKind::Interleaved1F1B, 4, 3, 2, 8)));
}

TEST(ShapeError, GeneratorsThrowOnABrokenInvariant) {
  EXPECT_THROW((void)make_program(shape(ScheduleKind::OneFOneB, 0, 8)), std::invalid_argument);
  EXPECT_THROW((void)make_1f1b(shape(ScheduleKind::OneFOneB, 2, 4, 2)), std::invalid_argument);
  EXPECT_THROW((void)make_gpipe(shape(ScheduleKind::GPipe, 2, 0)), std::invalid_argument);
  PipelineShape s = shape(ScheduleKind::Interleaved1F1B, 2, 4, 2);
  s.microbatch_group_size = -1;
  EXPECT_THROW((void)make_interleaved_1f1b(s), std::invalid_argument);
  EXPECT_NO_THROW((void)make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 4, 2)));
}


// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): the interleaved table with one
// more warmup forward, each steady-state forward paired with the backward after it.
TEST(Combined1F1B, RemainderGroupExample) {  // p = 2, m = 5, v = 2, N = 3: warm-up 6 on rank 0, 4 on rank 1
  const Program p = make_combined_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 5, 2, 3));
  EXPECT_EQ(rank_text(p, 0),
            "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 F3.0&B0.1 F4.0&B1.1 F3.1&B2.1 F4.1&B0.0 B1.0 B2.0 B3.1 B4.1 B3.0 B4.0");
  EXPECT_EQ(rank_text(p, 1),
            "F0.0 F1.0 F2.0 F0.1 F1.1&B0.1 F2.1&B1.1 F3.0&B2.1 F4.0&B0.0 F3.1&B1.0 F4.1&B2.0 B3.1 B4.1 B3.0 B4.0");
}

TEST(Combined1F1B, OneStageRunsEachForwardBesideThePreviousBackward) {
  const Program one_stage = make_combined_1f1b(shape(ScheduleKind::OneFOneB, 1, 3));
  EXPECT_EQ(rank_text(one_stage, 0), "F0 F1&B0 F2&B1 B2");
  EXPECT_EQ(rank_text(make_combined_1f1b(shape(ScheduleKind::GPipe, 1, 1)), 0), "F0 B0");
  // A pair's backward frees as its forward stashes (Megatron interleaves their layers): one
  // microbatch in flight with one stage; on a pipeline the one more warm-up forward holds what the
  // plain order's first steady-state forward held before its backward.
  EXPECT_EQ(peak_in_flight(one_stage), std::vector<int>{1});
  const PipelineShape interleaved = shape(ScheduleKind::Interleaved1F1B, 2, 4, 2, 2);
  EXPECT_EQ(peak_in_flight(make_combined_1f1b(interleaved)), peak_in_flight(make_interleaved_1f1b(interleaved)));
}

TEST(Combined1F1B, PairsNeverHoldTheirOwnForwardAndEveryShapeValidates) {
  for (const int p : {2, 4}) {
    for (const int v : {2, 3}) {
      for (const int m : {4, 8, 12}) {
        const Program program = make_combined_1f1b(shape(ScheduleKind::Interleaved1F1B, p, m, v, p));
        EXPECT_FALSE(validate(program).has_value()) << "p " << p << " v " << v << " m " << m;
        for (const auto& stream : program.streams) {
          for (const Op& op : stream) {
            if (op.kind != OpKind::ForwardBackward) continue;
            EXPECT_FALSE(op.microbatch == op.backward_microbatch && op.chunk == op.backward_chunk);
          }
        }
      }
    }
  }
  // A pipeline without interleaving has no combined 1F1B in Megatron-Core.
  EXPECT_THROW((void)make_combined_1f1b(shape(ScheduleKind::OneFOneB, 2, 4)), std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::schedule
