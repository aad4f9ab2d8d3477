#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

#include "schedule_test_support.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/schedule/message.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/validate.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;
using testing::shape;

std::vector<std::vector<ChunkCollectives>> one_all_reduce_per_pass(int stages) {
  ChunkCollectives c;
  c.forward.push_back({OpKind::AllReduce, plan::Axis::Tensor, Bytes::mb(8), 4});
  c.backward.push_back({OpKind::AllReduce, plan::Axis::Tensor, Bytes::mb(8), 4});
  return std::vector<std::vector<ChunkCollectives>>(static_cast<std::size_t>(stages), std::vector<ChunkCollectives>{c});
}

TEST(LayerCollectives, BlockingFollowTheirComputeOpAndPrecedeItsSend) {
  const Program p = add_layer_collectives(lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 2, 1))),
                                          one_all_reduce_per_pass(2), false);
  EXPECT_EQ(to_text(p, true), "F0 AR:tp*4 sA0 rG0 B0 AR:tp*4\nrA0 F0 AR:tp*4 B0 AR:tp*4 sG0\n");
  EXPECT_EQ(p.streams[0][1].stream, CommStream::Blocking);
  EXPECT_EQ(p.streams[0][1].group, plan::AxisSet(plan::Axis::Tensor));
  EXPECT_FALSE(validate(p));
  // Idempotent: the in-layer collectives are re-derived.
  EXPECT_EQ(add_layer_collectives(p, one_all_reduce_per_pass(2), false), p);
}

TEST(LayerCollectives, OverlappedPrecedeTheirComputeOp) {
  const Program p = add_layer_collectives(lower_comm(make_zb_h1(shape(ScheduleKind::ZbH1, 2, 1))),
                                          one_all_reduce_per_pass(2), true);
  // The input-gradient half carries the backward's collectives; W communicates nothing.
  EXPECT_EQ(to_text(p, true), "AR:tp*4 F0 sA0 rG0 AR:tp*4 I0 W0\nrA0 AR:tp*4 F0 AR:tp*4 I0 sG0 W0\n");
  EXPECT_EQ(p.streams[0][0].stream, CommStream::Overlapped);
  EXPECT_THROW((void)add_layer_collectives(p, one_all_reduce_per_pass(3), true), std::invalid_argument);
}

// GPT-3 1.3B (24 blocks of 2 all-reduces, a vocabulary-parallel embedding of 1) on tensor 2: 49
// all-reduces of s x h x 2 bytes per pass; under sequence parallelism each is an all-gather and a
// reduce-scatter; full recomputation doubles the backward's.
TEST(LayerCollectives, FromTheModelsLayers) {
  const model::Model m = model::load_model_file(std::string(MPSIM_SOURCE_DIR) + "/configs/models/gpt3-1.3b.yaml");
  plan::Plan p;
  p.degrees.set(plan::Axis::Tensor, 2);
  p.micro_batch = 2;
  p.partition = {0, 24};
  const Bytes output = Bytes::bytes(2048LL * 2048 * 2 * 2);
  auto c = chunk_layer_collectives(m, p);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0][0].forward, (std::vector<LayerCollective>{{OpKind::AllReduce, plan::Axis::Tensor, output, 49}}));
  EXPECT_EQ(c[0][0].backward, c[0][0].forward);
  p.sequence_parallel = true;
  p.recompute = model::Recompute::Full;
  c = chunk_layer_collectives(m, p);
  EXPECT_EQ(c[0][0].forward, (std::vector<LayerCollective>{{OpKind::AllGather, plan::Axis::Tensor, output, 49},
                                                           {OpKind::ReduceScatter, plan::Axis::Tensor, output, 49}}));
  EXPECT_EQ(c[0][0].backward, (std::vector<LayerCollective>{{OpKind::AllGather, plan::Axis::Tensor, output, 97},
                                                            {OpKind::ReduceScatter, plan::Axis::Tensor, output, 97}}));
  p.degrees.set(plan::Axis::Tensor, 1);
  EXPECT_TRUE(chunk_layer_collectives(m, p)[0][0].forward.empty());
}

// One identity per message: a Send and its Recv name the same one, and numbers are dense and distinct.
TEST(Message, SendAndRecvNameTheSameMessage) {
  const PipelineShape sh = shape(ScheduleKind::Interleaved1F1B, 3, 6, 2);
  const Program p = lower_comm(make_interleaved_1f1b(sh));
  std::map<MessageId, int> sends, recvs;
  std::set<std::int64_t> numbers;
  for (int r = 0; r < sh.stages; ++r) {
    for (const Op& op : p.streams[static_cast<std::size_t>(r)]) {
      if (is_send(op.kind)) ++sends[message_of(sh, r, op)];
      if (is_recv(op.kind)) {
        const MessageId id = message_of(sh, r, op);
        ++recvs[id];
        const std::int64_t n = message_number(sh, id);
        EXPECT_GE(n, 0);
        EXPECT_LT(n, message_count(sh));
        EXPECT_TRUE(numbers.insert(n).second);
      }
    }
  }
  EXPECT_EQ(sends, recvs);
  EXPECT_EQ(sends.size(), 2u * 6 * (3 * 2 - 1));  // both ways over the 5 boundaries of 6 virtual stages
}

}  // namespace
}  // namespace mpsim::schedule
