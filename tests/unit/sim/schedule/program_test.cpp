#include "sim/schedule/program.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/schedule/ops.h"

namespace mpsim::schedule {
namespace {

constexpr OpKind kAllKinds[] = {OpKind::Forward,        OpKind::Backward,       OpKind::BackwardInput,
                                OpKind::BackwardWeight, OpKind::SendActivation, OpKind::RecvActivation,
                                OpKind::SendGrad,       OpKind::RecvGrad,       OpKind::AllReduce,
                                OpKind::ReduceScatter,  OpKind::AllGather,      OpKind::OptimizerStep};

TEST(Program, EveryKindHasItsOwnName) {
  std::set<std::string_view> names;
  for (const OpKind k : kAllKinds) names.insert(to_string(k));
  EXPECT_EQ(names.size(), std::size(kAllKinds));
  EXPECT_EQ(to_string(OpKind::BackwardInput), "BackwardInput");
  EXPECT_EQ(to_string(OpKind::OptimizerStep), "OptimizerStep");
}

TEST(Program, OpText) {
  EXPECT_EQ(to_text(compute_op(OpKind::Forward, 3), false), "F3");
  EXPECT_EQ(to_text(compute_op(OpKind::Forward, 3, 1), true), "F3.1");
  EXPECT_EQ(to_text(compute_op(OpKind::Backward, 0), false), "B0");
  EXPECT_EQ(to_text(compute_op(OpKind::BackwardInput, 12, 0), true), "I12.0");
  EXPECT_EQ(to_text(compute_op(OpKind::BackwardWeight, 7), false), "W7");
  EXPECT_EQ(to_text(comm_op(OpKind::SendActivation, 2, 0, 1), false), "sA2");
  EXPECT_EQ(to_text(comm_op(OpKind::RecvActivation, 2, 1, 1), true), "rA2.1");
  EXPECT_EQ(to_text(comm_op(OpKind::SendGrad, 4, 0, 0), false), "sG4");
  EXPECT_EQ(to_text(comm_op(OpKind::RecvGrad, 4, 0, 2), false), "rG4");
  EXPECT_EQ(to_text(collective_op(OpKind::AllReduce, plan::Axis::Data, Bytes::mib(1), 1), true), "AR");
  EXPECT_EQ(to_text(collective_op(OpKind::ReduceScatter, plan::Axis::Data, Bytes::mib(1)), false), "RS");
  EXPECT_EQ(to_text(collective_op(OpKind::AllGather, plan::Axis::Data, Bytes::mib(1)), false), "AG");
  EXPECT_EQ(to_text(optimizer_step_op(), false), "OPT");
}

TEST(Program, TextHasOneLinePerRankAndHidesCommUnlessAsked) {
  Program p;
  p.shape.stages = 2;
  p.streams = {{compute_op(OpKind::Forward, 0), comm_op(OpKind::SendActivation, 0, 0, 1),
                comm_op(OpKind::RecvGrad, 0, 0, 1), compute_op(OpKind::Backward, 0), optimizer_step_op()},
               {comm_op(OpKind::RecvActivation, 0, 0, 0), compute_op(OpKind::Forward, 0),
                compute_op(OpKind::Backward, 0), comm_op(OpKind::SendGrad, 0, 0, 0),
                collective_op(OpKind::AllReduce, plan::Axis::Data, Bytes::mib(4)), optimizer_step_op()}};
  EXPECT_EQ(to_text(p), "F0 B0\nF0 B0\n");
  EXPECT_EQ(to_text(p, true), "F0 sA0 rG0 B0 OPT\nrA0 F0 B0 sG0 AR OPT\n");
  p.shape.chunks = 2;
  EXPECT_EQ(to_text(p), "F0.0 B0.0\nF0.0 B0.0\n");
}

TEST(Program, ShapeOfAPlan) {
  plan::Plan plan;
  plan.degrees.set(plan::Axis::Pipeline, 4);
  plan.virtual_stages = 2;
  plan.microbatches = 16;
  plan.schedule = plan::ScheduleKind::Interleaved1F1B;
  plan.microbatch_group_size = 4;
  plan.active_microbatches = 6;
  plan.degrees.set(plan::Axis::Tensor, 8);
  plan.degrees.set(plan::Axis::Data, 2);
  const PipelineShape s = shape_of(plan);
  EXPECT_EQ(s.stages, 4);
  EXPECT_EQ(s.microbatches, 16);
  EXPECT_EQ(s.chunks, 2);
  EXPECT_EQ(s.kind, plan::ScheduleKind::Interleaved1F1B);
  EXPECT_EQ(s.microbatch_group_size, 4);
  EXPECT_EQ(s.active_microbatches, 6);
}

}  // namespace
}  // namespace mpsim::schedule
