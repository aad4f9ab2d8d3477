#include "sim/schedule/passes.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/validate.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;
using testing::rank_text;
using testing::shape;

TEST(LowerComm, OneFOneBTwoStages) {
  const Program p = lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2)));
  EXPECT_EQ(to_text(p, true), "F0 sA0 F1 sA1 rG0 B0 rG1 B1\nrA0 F0 B0 sG0 rA1 F1 B1 sG1\n");
  for (const Op& op : p.streams[0]) {
    if (is_send(op.kind) || is_recv(op.kind)) {
      EXPECT_EQ(op.peer, 1u);
    }
  }
  for (const Op& op : p.streams[1]) {
    if (is_send(op.kind) || is_recv(op.kind)) {
      EXPECT_EQ(op.peer, 0u);
    }
  }
}

TEST(LowerComm, MiddleStagesReceiveAndSendBothWays) {
  const Program p = lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 3, 1)));
  EXPECT_EQ(to_text(p, true), "F0 sA0 rG0 B0\nrA0 F0 sA0 rG0 B0 sG0\nrA0 F0 B0 sG0\n");
  EXPECT_EQ(p.streams[1][0].peer, 0u);  // rA0 from rank 0
  EXPECT_EQ(p.streams[1][2].peer, 2u);  // sA0 to rank 2
  EXPECT_EQ(p.streams[1][3].peer, 2u);  // rG0 from rank 2
  EXPECT_EQ(p.streams[1][5].peer, 0u);  // sG0 to rank 0
}

TEST(LowerComm, InterleavedChunksWrapAroundThePipeline) {
  // p = 2, v = 2: rank 0 holds virtual stages 0 and 2, rank 1 holds 1 and 3.
  const Program p = lower_comm(make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 2, 2, 2)));
  // Rank 1's chunk 0 (stage 1) sends to rank 0's chunk 1 (stage 2); its chunk 1 is the last stage.
  EXPECT_EQ(rank_text(p, 1, true),
            "rA0.0 F0.0 sA0.0 rA1.0 F1.0 sA1.0 rA0.1 F0.1 B0.1 sG0.1 rA1.1 F1.1 B1.1 sG1.1 rG0.0 B0.0 sG0.0 rG1.0 "
            "B1.0 sG1.0");
  EXPECT_EQ(rank_text(p, 0, true),
            "F0.0 sA0.0 F1.0 sA1.0 rA0.1 F0.1 sA0.1 rA1.1 F1.1 sA1.1 rG0.1 B0.1 sG0.1 rG1.1 B1.1 sG1.1 rG0.0 B0.0 "
            "rG1.0 B1.0");
  for (const Op& op : p.streams[0]) {
    if (is_send(op.kind) || is_recv(op.kind)) {
      EXPECT_EQ(op.peer, 1u);
    }
  }
}

TEST(LowerComm, OneRankNeedsNoTransfers) {
  const Program p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 1, 4, 3, 2));
  EXPECT_EQ(lower_comm(p), p);
}

TEST(LowerComm, WeightPassesNeedNoTransfers) {
  const Program p = lower_comm(make_zb_h1(shape(ScheduleKind::ZbH1, 2, 2)));
  EXPECT_EQ(to_text(p, true), "F0 sA0 F1 sA1 rG0 I0 W0 rG1 I1 W1\nrA0 F0 I0 sG0 rA1 F1 I1 sG1 W0 W1\n");
}

TEST(LowerComm, IsIdempotent) {
  const Program once = lower_comm(make_zb_h2(shape(ScheduleKind::ZbH2, 4, 6)));
  EXPECT_EQ(lower_comm(once), once);
}

GradientSync dp_sync(int stages, int chunks, Bytes per_chunk, Bytes bucket, bool overlap, int zero) {
  GradientSync sync;
  sync.gradient_bytes.assign(static_cast<std::size_t>(stages),
                             std::vector<Bytes>(static_cast<std::size_t>(chunks), per_chunk));
  sync.bucket_size = bucket;
  sync.overlap = overlap;
  sync.zero = zero;
  sync.data_parallel = true;
  return sync;
}

std::vector<std::int64_t> collective_bytes(const std::vector<Op>& stream, OpKind kind) {
  std::vector<std::int64_t> out;
  for (const Op& op : stream) {
    if (op.kind == kind) out.push_back(op.bytes.count());
  }
  return out;
}

TEST(GradientSync, BucketsSplitEachChunkWithTheLastOneSmaller) {
  GradientSync sync = dp_sync(2, 1, Bytes::mib(10), Bytes::mib(4), true, 0);
  sync.gradient_bytes[1][0] = Bytes::mib(25);
  const Program p = add_gradient_sync(lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2))), sync);
  EXPECT_EQ(to_text(p, true),
            "F0 sA0 F1 sA1 rG0 B0 rG1 B1 AR AR AR OPT\n"
            "rA0 F0 B0 sG0 rA1 F1 B1 sG1 AR AR AR AR AR AR AR OPT\n");
  const std::int64_t mib = Bytes::mib(1).count();
  EXPECT_EQ(collective_bytes(p.streams[0], OpKind::AllReduce), (std::vector<std::int64_t>{4 * mib, 4 * mib, 2 * mib}));
  EXPECT_EQ(collective_bytes(p.streams[1], OpKind::AllReduce).back(), 1 * mib);
  for (const Op& op : p.streams[1]) {
    if (is_collective(op.kind)) {
      EXPECT_EQ(op.group, plan::Axis::Data);
    }
  }
}

TEST(GradientSync, OverlapIssuesAChunkRightAfterItsLastBackward) {
  const Program lowered = lower_comm(make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 4, 2, 2)));
  const Program p = add_gradient_sync(lowered, dp_sync(2, 2, Bytes::mib(8), Bytes::mib(4), true, 0));
  EXPECT_EQ(rank_text(p, 1, true),
            "rA0.0 F0.0 sA0.0 rA1.0 F1.0 sA1.0 rA0.1 F0.1 B0.1 sG0.1 rA1.1 F1.1 B1.1 sG1.1 rA2.0 F2.0 sA2.0 rG0.0 "
            "B0.0 sG0.0 rA3.0 F3.0 sA3.0 rG1.0 B1.0 sG1.0 rA2.1 F2.1 B2.1 sG2.1 rA3.1 F3.1 B3.1 sG3.1 AR AR rG2.0 "
            "B2.0 sG2.0 rG3.0 B3.0 sG3.0 AR AR OPT");
  // The first two buckets carry chunk 1, the last two chunk 0.
  std::vector<int> chunks;
  for (const Op& op : p.streams[1]) {
    if (op.kind == OpKind::AllReduce) chunks.push_back(op.chunk);
  }
  EXPECT_EQ(chunks, (std::vector<int>{1, 1, 0, 0}));
}

TEST(GradientSync, OverlapWaitsForTheWeightPass) {
  const Program p = add_gradient_sync(make_zb_h1(shape(ScheduleKind::ZbH1, 2, 2)),
                                      dp_sync(2, 1, Bytes::mib(1), Bytes::mib(4), true, 0));
  EXPECT_EQ(to_text(p, true), "F0 F1 I0 W0 I1 W1 AR OPT\nF0 I0 F1 I1 W0 W1 AR OPT\n");
}

TEST(GradientSync, WithoutOverlapEverythingWaitsForTheEndInReverseChunkOrder) {
  const Program lowered = lower_comm(make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 4, 2, 2)));
  const Program p = add_gradient_sync(lowered, dp_sync(2, 2, Bytes::mib(6), Bytes::mib(4), false, 0));
  const std::vector<Op>& s = p.streams[1];
  ASSERT_GE(s.size(), 5u);
  EXPECT_EQ(s.size(), lowered.streams[1].size() + 5);
  EXPECT_EQ(std::vector<Op>(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(lowered.streams[1].size())),
            lowered.streams[1]);
  const std::int64_t mib = Bytes::mib(1).count();
  EXPECT_EQ(collective_bytes(s, OpKind::AllReduce), (std::vector<std::int64_t>{4 * mib, 2 * mib, 4 * mib, 2 * mib}));
  EXPECT_EQ(s[s.size() - 5].chunk, 1);
  EXPECT_EQ(s[s.size() - 2].chunk, 0);
  EXPECT_EQ(s.back().kind, OpKind::OptimizerStep);
}

TEST(GradientSync, ZeroReduceScattersThenGathersParametersAfterTheStep) {
  const Program p = add_gradient_sync(make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 1, 2, 2, 1)),
                                      dp_sync(1, 2, Bytes::mib(5), Bytes::mib(4), false, 1));
  EXPECT_EQ(to_text(p, true), "F0.0 F0.1 B0.1 F1.0 B0.0 F1.1 B1.1 B1.0 RS RS RS RS OPT AG AG AG AG\n");
  std::vector<int> gather_chunks;
  for (const Op& op : p.streams[0]) {
    if (op.kind == OpKind::AllGather) gather_chunks.push_back(op.chunk);
  }
  EXPECT_EQ(gather_chunks, (std::vector<int>{0, 0, 1, 1}));  // the next forward needs chunk 0 first
  const std::int64_t mib = Bytes::mib(1).count();
  // The gathered weights are 16-bit: half the bytes of the fp32 gradient buckets.
  EXPECT_EQ(collective_bytes(p.streams[0], OpKind::AllGather),
            (std::vector<std::int64_t>{2 * mib, mib / 2, 2 * mib, mib / 2}));
}

TEST(GradientSync, WithoutDataParallelismOnlyTheOptimizerStep) {
  GradientSync sync;  // data_parallel = false; sizes may be left empty
  const Program p = add_gradient_sync(make_gpipe(shape(ScheduleKind::GPipe, 2, 2)), sync);
  EXPECT_EQ(to_text(p, true), "F0 F1 B0 B1 OPT\nF0 F1 B0 B1 OPT\n");
}

TEST(GradientSync, EmptyChunksHaveNoBuckets) {
  GradientSync sync = dp_sync(2, 1, Bytes::mib(3), Bytes::mib(4), true, 0);
  sync.gradient_bytes[0][0] = Bytes{};
  const Program p = add_gradient_sync(make_gpipe(shape(ScheduleKind::GPipe, 2, 1)), sync);
  EXPECT_EQ(to_text(p, true), "F0 B0 OPT\nF0 B0 AR OPT\n");
}

TEST(GradientSync, RejectsSizesThatDoNotFitTheProgram) {
  const Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2));
  EXPECT_THROW((void)add_gradient_sync(p, dp_sync(3, 1, Bytes::mib(1), Bytes::mib(1), true, 0)), std::invalid_argument);
  EXPECT_THROW((void)add_gradient_sync(p, dp_sync(2, 2, Bytes::mib(1), Bytes::mib(1), true, 0)), std::invalid_argument);
  EXPECT_THROW((void)add_gradient_sync(p, dp_sync(2, 1, Bytes::mib(1), Bytes{}, true, 0)), std::invalid_argument);
  EXPECT_THROW((void)add_gradient_sync(p, dp_sync(2, 1, Bytes::mib(1), Bytes::mib(1), true, -1)),
               std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::schedule
