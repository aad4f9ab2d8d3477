// The validator names the rank and the op of deliberately broken programs.
#include <gtest/gtest.h>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/validate.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;
using testing::index_of;
using testing::shape;

void erase(Program& p, int rank, std::size_t index) {
  auto& s = p.streams[static_cast<std::size_t>(rank)];
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(index));
}

void insert(Program& p, int rank, std::size_t index, const Op& op) {
  auto& s = p.streams[static_cast<std::size_t>(rank)];
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(index), op);
}

ProgramError error_of(const Program& p) {
  const std::optional<ProgramError> e = validate(p);
  if (!e) return {-2, 0, "validates"};
  return *e;
}

Program lowered_1f1b() { return lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 4, 8))); }

TEST(BrokenProgram, MissingRecvIsReportedAtItsSend) {
  Program p = lowered_1f1b();
  erase(p, 2, index_of(p, 2, "rA3"));
  const std::size_t send = index_of(p, 1, "sA3");
  EXPECT_EQ(
      error_of(p),
      (ProgramError{1, send, "rank 1 op " + std::to_string(send) + " (sA3) is never received: rank 2 has no rA3"}));
}

TEST(BrokenProgram, MissingSendIsReportedAtItsRecv) {
  Program p = lowered_1f1b();
  erase(p, 1, index_of(p, 1, "sA3"));
  const std::size_t recv = index_of(p, 2, "rA3");
  EXPECT_EQ(error_of(p),
            (ProgramError{2, recv, "rank 2 op " + std::to_string(recv) + " (rA3) waits for a send that never comes"}));
}

TEST(BrokenProgram, MissingGradientSend) {
  Program p = lowered_1f1b();
  erase(p, 3, index_of(p, 3, "sG5"));
  const std::size_t recv = index_of(p, 2, "rG5");
  EXPECT_EQ(error_of(p).rank, 2);
  EXPECT_EQ(error_of(p).op_index, recv);
}

TEST(BrokenProgram, TwoRanksThatEachReceiveBeforeTheySendDeadlock) {
  // 1F1B, p = 2, m = 1: rank 0 "F0 sA0 rG0 B0", rank 1 "rA0 F0 B0 sG0". Rank 0 now waits for the
  // gradient before it sends the activation that rank 1 waits for.
  Program p = lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 2, 1)));
  std::swap(p.streams[0][1], p.streams[0][2]);
  ASSERT_EQ(to_text(p, true), "F0 rG0 sA0 B0\nrA0 F0 B0 sG0\n");
  EXPECT_EQ(error_of(p),
            (ProgramError{0, 1,
                          "rank 0 op 1 (rG0) waits for rank 1 op 3 (sG0), but rank 1 is stuck at op 0 (rA0): "
                          "deadlock"}));
}

TEST(BrokenProgram, DeadlockInALongerPipelineNamesTheLowestStuckRank) {
  // 1F1B, p = 4, m = 8, with rank 1 running B0 before F2 and rank 2 running F2 before B0: ranks 1
  // and 2 wait on each other, and rank 0, waiting for rank 1's gradient, is the lowest stuck rank.
  Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 4, 8));
  ASSERT_EQ(testing::rank_text(p, 1).substr(0, 14), "F0 F1 F2 B0 F3");
  ASSERT_EQ(testing::rank_text(p, 2).substr(0, 14), "F0 F1 B0 F2 B1");
  std::swap(p.streams[1][2], p.streams[1][3]);
  std::swap(p.streams[2][2], p.streams[2][3]);
  EXPECT_EQ(error_of(p), (ProgramError{0, 4,
                                       "rank 0 op 4 (B0) waits for rank 1 op 2 (B0), but rank 1 is stuck at "
                                       "op 2 (B0): deadlock"}));
  const Program lowered = lower_comm(p);
  const std::size_t r0 = index_of(lowered, 0, "rG0");
  const std::size_t s1 = index_of(lowered, 1, "sG0");
  const std::size_t r1 = index_of(lowered, 1, "rG0");
  EXPECT_EQ(error_of(lowered),
            (ProgramError{0, r0,
                          "rank 0 op " + std::to_string(r0) + " (rG0) waits for rank 1 op " + std::to_string(s1) +
                              " (sG0), but rank 1 is stuck at op " + std::to_string(r1) + " (rG0): deadlock"}));
}

TEST(BrokenProgram, CycleInAGeneratorOrderIsFoundByLowering) {
  // No comm ops: rank 1 runs F1 first, but rank 0 sends F1's input only after B0, which needs
  // rank 1's B0, which rank 1 runs last.
  Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2));
  p.streams[0] = {compute_op(OpKind::Forward, 0), compute_op(OpKind::Backward, 0), compute_op(OpKind::Forward, 1),
                  compute_op(OpKind::Backward, 1)};
  p.streams[1] = {compute_op(OpKind::Forward, 1), compute_op(OpKind::Backward, 1), compute_op(OpKind::Forward, 0),
                  compute_op(OpKind::Backward, 0)};
  EXPECT_EQ(error_of(p), (ProgramError{0, 1,
                                       "rank 0 op 1 (B0) waits for rank 1 op 3 (B0), but rank 1 is stuck at op 0 (F1): "
                                       "deadlock"}));
}

TEST(BrokenProgram, DuplicatedForward) {
  Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 4, 8));
  const std::size_t first = index_of(p, 2, "F3");
  insert(p, 2, first + 2, compute_op(OpKind::Forward, 3));
  EXPECT_EQ(error_of(p), (ProgramError{2, first + 2,
                                       "rank 2 op " + std::to_string(first + 2) +
                                           " (F3) runs a second time (first at op " + std::to_string(first) + ")"}));
}

TEST(BrokenProgram, DuplicatedForwardAfterLowering) {
  Program p = lowered_1f1b();
  const std::size_t first = index_of(p, 3, "F5");
  insert(p, 3, first + 1, compute_op(OpKind::Forward, 5));
  EXPECT_EQ(error_of(p).rank, 3);
  EXPECT_EQ(error_of(p).op_index, first + 1);
}

TEST(BrokenProgram, WeightPassBeforeItsInputPass) {
  Program p = make_zb_h1(shape(ScheduleKind::ZbH1, 4, 8));
  // Rank 1 runs "... I4 W3 ..."; move W3 before I3.
  const std::size_t w = index_of(p, 1, "W3");
  erase(p, 1, w);
  const std::size_t i3 = index_of(p, 1, "I3");
  insert(p, 1, i3, compute_op(OpKind::BackwardWeight, 3));
  EXPECT_EQ(error_of(p), (ProgramError{1, i3, "rank 1 op " + std::to_string(i3) + " (W3) runs before I3"}));
}

TEST(BrokenProgram, WeightPassAfterAFusedBackward) {
  Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2));
  p.streams[1].push_back(compute_op(OpKind::BackwardWeight, 1));
  EXPECT_EQ(error_of(p), (ProgramError{1, 4, "rank 1 op 4 (W1) follows the fused B1"}));
}

TEST(BrokenProgram, MissingPasses) {
  Program p = make_zb_h2(shape(ScheduleKind::ZbH2, 2, 3));
  erase(p, 1, index_of(p, 1, "W2"));
  EXPECT_EQ(error_of(p), (ProgramError{1, p.streams[1].size(), "rank 1 runs I2 but never W2"}));
  p = make_gpipe(shape(ScheduleKind::GPipe, 2, 3));
  erase(p, 0, index_of(p, 0, "B1"));
  EXPECT_EQ(error_of(p), (ProgramError{0, 5, "rank 0 never runs B1 (or I1 and W1)"}));
  p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 2, 2, 2, 2));
  erase(p, 1, index_of(p, 1, "F1.1"));
  erase(p, 1, index_of(p, 1, "B1.1"));
  EXPECT_EQ(error_of(p), (ProgramError{1, 6, "rank 1 never runs F1.1"}));
}

TEST(BrokenProgram, BackwardBeforeItsForward) {
  Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2));
  std::swap(p.streams[1][0], p.streams[1][1]);  // B0 F0 F1 B1
  EXPECT_EQ(error_of(p), (ProgramError{1, 0, "rank 1 op 0 (B0) runs before F0"}));
}

TEST(BrokenProgram, WrongPeer) {
  Program p = lowered_1f1b();
  const std::size_t send = index_of(p, 1, "sA2");
  p.streams[1][send].peer = 3;
  EXPECT_EQ(error_of(p), (ProgramError{1, send,
                                       "rank 1 op " + std::to_string(send) +
                                           " (sA2) names peer 3, but virtual stage 2 lives on rank 2"}));
}

TEST(BrokenProgram, TransfersThatLeadNowhere) {
  Program p = lowered_1f1b();
  insert(p, 3, 2, comm_op(OpKind::SendActivation, 0, 0, 0));
  EXPECT_EQ(error_of(p), (ProgramError{3, 2, "rank 3 op 2 (sA0) sends to virtual stage 4, which does not exist"}));
  p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 1, 2, 2, 1));
  insert(p, 0, 1, comm_op(OpKind::SendActivation, 0, 0, 0));
  EXPECT_EQ(
      error_of(p),
      (ProgramError{0, 1, "rank 0 op 1 (sA0.0) moves data between virtual stages 0 and 1, which share the rank"}));
}

TEST(BrokenProgram, SendBeforeItsDataExists) {
  Program p = lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 2, 1)));
  std::swap(p.streams[0][0], p.streams[0][1]);  // sA0 F0 rG0 B0
  EXPECT_EQ(error_of(p), (ProgramError{0, 0, "rank 0 op 0 (sA0) sends before F0 has run"}));
}

TEST(BrokenProgram, ComputeBeforeItsReceive) {
  Program p = lower_comm(make_1f1b(shape(ScheduleKind::OneFOneB, 2, 1)));
  std::swap(p.streams[1][0], p.streams[1][1]);  // F0 rA0 B0 sG0
  EXPECT_EQ(error_of(p), (ProgramError{1, 0, "rank 1 op 0 (F0) runs before its input arrives: no rA0 before it"}));
}

TEST(BrokenProgram, OneRankChunksOutOfOrder) {
  Program p = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 1, 1, 2, 1));
  ASSERT_EQ(to_text(p), "F0.0 F0.1 B0.1 B0.0\n");
  std::swap(p.streams[0][0], p.streams[0][1]);
  EXPECT_EQ(error_of(p), (ProgramError{0, 0, "rank 0 op 0 (F0.1) runs before F0.0, which feeds it"}));
}

TEST(BrokenProgram, OutOfRangeFieldsAndStreamCount) {
  Program p = make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2));
  p.streams[0][1].microbatch = 9;
  EXPECT_EQ(error_of(p), (ProgramError{0, 1, "rank 0 op 1 (F9) names microbatch 9, but the step has 2"}));
  p = make_1f1b(shape(ScheduleKind::OneFOneB, 2, 2));
  p.streams.pop_back();
  EXPECT_EQ(error_of(p), (ProgramError{-1, 0, "the program has 1 streams for 2 stages"}));
}

TEST(BrokenProgram, DuplicatedTransfer) {
  Program p = lowered_1f1b();
  const std::size_t recv = index_of(p, 2, "rA3");
  insert(p, 2, recv + 1, comm_op(OpKind::RecvActivation, 3, 0, 1));
  EXPECT_EQ(error_of(p), (ProgramError{2, recv + 1,
                                       "rank 2 op " + std::to_string(recv + 1) + " (rA3) repeats the receive at op " +
                                           std::to_string(recv)}));
}

}  // namespace
}  // namespace mpsim::schedule
