// The point-to-point peers a rank needs under a plan: its pipeline neighbours only, found from the
// schedule's Send and Recv ops, so the CUDA backend's pair communicators stay a handful per rank
// however large the job (one per ordered pair of the world before: 2 (n - 1) per rank).
#include "executor/interpreter/peers.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/plan/layout.h"

namespace mpsim::executor {
namespace {

plan::Plan plan_of(int tensor, int pipeline, int data, plan::ScheduleKind schedule, int virtual_stages = 1,
                   int microbatches = 16) {
  plan::Plan p;
  p.degrees.set(plan::Axis::Tensor, tensor);
  p.degrees.set(plan::Axis::Pipeline, pipeline);
  p.degrees.set(plan::Axis::Data, data);
  p.schedule = schedule;
  p.virtual_stages = virtual_stages;
  p.microbatches = microbatches;
  p.microbatch_group_size = schedule == plan::ScheduleKind::Interleaved1F1B ? pipeline : 1;
  p.placement = {plan::Axis::Tensor, plan::Axis::Data, plan::Axis::Pipeline};
  return p;
}

/// Pair communicators (one per direction and peer) over the whole job.
std::size_t pair_communicators(const plan::Plan& p) {
  std::size_t count = 0;
  for (int r = 0; r < p.gpus(); ++r) count += 2 * point_to_point_peers(p, r).size();
  return count;
}

TEST(Peers, PipelineNeighboursOnly) {
  using plan::ScheduleKind;
  struct Case {
    const char* name;
    plan::Plan plan;
    std::size_t communicators;  // counted by hand: 2 per direction of each neighbouring stage pair
  };
  const Case cases[] = {
      // 8 ranks, pipeline 8: 7 stage boundaries, both ways, 2 communicators each.
      {"8 ranks, 1f1b pp8", plan_of(1, 8, 1, ScheduleKind::OneFOneB), 7 * 2 * 2},
      // Interleaving adds the wrap from the last rank back to rank 0 (chunk c to c + 1).
      {"8 ranks, interleaved pp8 v2", plan_of(1, 8, 1, ScheduleKind::Interleaved1F1B, 2), 8 * 2 * 2},
      // The V turns on the last rank: the same 7 boundaries.
      {"8 ranks, zb-v pp8", plan_of(1, 8, 1, ScheduleKind::ZbV, 2), 7 * 2 * 2},
      // 64 ranks, tp 4 x pp 4 x dp 4: 16 pipelines of 3 boundaries.
      {"64 ranks, 1f1b tp4 pp4 dp4", plan_of(4, 4, 4, ScheduleKind::OneFOneB), 16 * 3 * 2 * 2},
      {"64 ranks, data only", plan_of(1, 1, 64, ScheduleKind::OneFOneB), 0},
      // 1024 ranks, tp 8 x pp 8 x dp 16: 128 pipelines of 7 boundaries; 2,046 per rank before.
      {"1024 ranks, 1f1b tp8 pp8 dp16", plan_of(8, 8, 16, ScheduleKind::OneFOneB), 128 * 7 * 2 * 2},
      {"1024 ranks, dualpipev tp8 pp8 dp16", plan_of(8, 8, 16, ScheduleKind::DualPipeV, 2), 128 * 7 * 2 * 2},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(pair_communicators(c.plan), c.communicators) << c.name;
    const plan::Layout layout(c.plan);
    for (int r = 0; r < c.plan.gpus(); ++r) {
      const std::vector<int> peers = point_to_point_peers(c.plan, r);
      EXPECT_LE(peers.size(), 2u) << c.name << " rank " << r;
      for (const int q : peers) {
        // Same tensor and data position, another pipeline rank.
        EXPECT_NE(q, r) << c.name;
        EXPECT_EQ(layout.coordinate(q, plan::Axis::Tensor), layout.coordinate(r, plan::Axis::Tensor)) << c.name;
        EXPECT_EQ(layout.coordinate(q, plan::Axis::Data), layout.coordinate(r, plan::Axis::Data)) << c.name;
        EXPECT_NE(layout.coordinate(q, plan::Axis::Pipeline), layout.coordinate(r, plan::Axis::Pipeline)) << c.name;
      }
    }
  }
}

TEST(Peers, TheContextRingAddsItsNeighboursUnderP2pOnly) {
  plan::Plan p = plan_of(1, 2, 1, plan::ScheduleKind::OneFOneB);
  p.degrees.set(plan::Axis::Context, 4);
  const plan::Layout layout(p);
  for (const plan::ContextComm comm : {plan::ContextComm::P2p, plan::ContextComm::AllGather}) {
    p.context_comm = comm;
    for (int r = 0; r < p.gpus(); ++r) {
      const int me = layout.coordinate(r, plan::Axis::Context);
      std::set<int> want{layout.with(r, plan::Axis::Pipeline, 1 - layout.coordinate(r, plan::Axis::Pipeline))};
      if (comm == plan::ContextComm::P2p) {
        want.insert(layout.with(r, plan::Axis::Context, (me + 1) % 4));
        want.insert(layout.with(r, plan::Axis::Context, (me + 3) % 4));
      }
      const std::vector<int> peers = point_to_point_peers(p, r);
      EXPECT_EQ(std::set<int>(peers.begin(), peers.end()), want) << "rank " << r;
    }
  }
}

}  // namespace
}  // namespace mpsim::executor
