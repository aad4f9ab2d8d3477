// The generators' per-rank orders against orders transcribed from the schedules' published sources, and
// their idle time against the papers' closed forms.
//
// The other schedule tests mostly compare a generator with what a generator printed (golden files written
// under MPSIM_UPDATE_GOLDEN=1) or with counts read off the implementation. Here every expected order is a
// literal written down from a source outside mpsim, cited beside it, and every bubble is computed from the
// paper's formula. Nothing here goes through the project's own printer (to_text) or placement
// (plan::virtual_stage_of): the renderer and the unit-time replay below are written from the published
// definitions, so a bug shared by a generator and those helpers cannot hide itself.
//
// Notation: F is a forward pass, B a fused backward, and where the backward is split, I its input-gradient
// half and W its weight-gradient half. The Zero Bubble papers call the input-gradient pass "B"; it is
// written "I" here (PyTorch's action letter, and the IR's), so that B always means a fused backward. With
// more than one chunk per rank the chunk follows a dot: "F3.1" is microbatch 3 on the rank's chunk 1.
// Microbatches count from 0 (the papers' figures count from 1).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/program.h"

namespace mpsim::schedule::published {
namespace {

using plan::ScheduleKind;
using schedule::testing::shape;

/// Rank `rank`'s compute ops in the notation above. Generators emit compute ops only; anything else is
/// shown as "?" so that it fails the comparison visibly instead of being skipped.
std::string render_rank(const Program& program, int rank) {
  const bool chunked = program.shape.chunks > 1;
  std::string out;
  for (const Op& op : program.streams[static_cast<std::size_t>(rank)]) {
    std::string letter;
    switch (op.kind) {
      case OpKind::Forward: letter = "F"; break;
      case OpKind::Backward: letter = "B"; break;
      case OpKind::BackwardInput: letter = "I"; break;
      case OpKind::BackwardWeight: letter = "W"; break;
      default: letter = "?"; break;
    }
    if (!out.empty()) out += ' ';
    out += letter + std::to_string(op.microbatch);
    if (chunked) out += "." + std::to_string(op.chunk);
  }
  return out;
}

/// Every rank's order against `expected` (one string per rank). On a mismatch the message shows the
/// rank, the first op that differs, and both whole streams one above the other.
::testing::AssertionResult orders_match(const Program& program, const std::vector<std::string>& expected) {
  if (program.streams.size() != expected.size()) {
    return ::testing::AssertionFailure() << program.streams.size() << " ranks, expected " << expected.size();
  }
  ::testing::AssertionResult result = ::testing::AssertionSuccess();
  bool failed = false;
  for (std::size_t rank = 0; rank < expected.size(); ++rank) {
    const std::string actual = render_rank(program, static_cast<int>(rank));
    if (actual == expected[rank]) continue;
    std::istringstream want_ops(expected[rank]);
    std::istringstream got_ops(actual);
    std::string want;
    std::string got;
    int index = 0;
    while (true) {
      const bool more_want = static_cast<bool>(want_ops >> want);
      const bool more_got = static_cast<bool>(got_ops >> got);
      if (!more_want) want = "(end)";
      if (!more_got) got = "(end)";
      if (want != got || (!more_want && !more_got)) break;
      ++index;
    }
    if (!failed) result = ::testing::AssertionFailure();
    failed = true;
    result << "\nrank " << rank << ": op " << index << " is " << got << ", published " << want
           << "\n  published: " << expected[rank] << "\n  generated: " << actual;
  }
  return result;
}

/// Unit-free pass times for the replay: a fused backward B, or its halves I and W.
struct PassTimes {
  int forward = 1;
  int backward = 2;
  int input = 1;
  int weight = 1;
};

/// The longest per-rank idle time of `program` replayed with `times`, no communication, each pass as
/// early as its rank's order and its data allow: max over ranks of (last end - first start - busy time).
/// That is the Zero Bubble paper's bubble (its "cost" is the largest such span; zero_bubble.yaml); for
/// 1F1B, GPipe and interleaved 1F1B it is the idle time of rank 0, the SC21 paper's bubble.
///
/// Placement, from the papers rather than from plan::virtual_stage_of: with `v_shape` false, chunk c of
/// rank i is virtual stage c * p + i (Megatron, SC21 section 2.2.2); with it true, chunk 0 of rank i is
/// stage i and chunk 1 stage 2p - 1 - i (the V of Zero Bubble section 6 and of the controllable-memory
/// paper). F of a stage waits for F of the stage before; B or I for the B or I of the stage after (the
/// last stage's for its own F); W for its own I.
int replay_idle(const Program& program, bool v_shape, const PassTimes& times) {
  const int p = program.shape.stages;
  const int stages = p * program.shape.chunks;
  auto stage_of = [&](int rank, int chunk) {
    if (!v_shape) return chunk * p + rank;
    return chunk == 0 ? rank : 2 * p - 1 - rank;
  };
  enum Pass { kForward, kBackward, kWeight };
  std::map<std::tuple<Pass, int, int>, int> end;  // (pass, microbatch, stage) -> end time
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<int> clock(static_cast<std::size_t>(p), 0);
  std::vector<int> first(static_cast<std::size_t>(p), -1);
  std::vector<int> busy(static_cast<std::size_t>(p), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int rank = 0; rank < p; ++rank) {
      const auto r = static_cast<std::size_t>(rank);
      const std::vector<Op>& stream = program.streams[r];
      while (next[r] < stream.size()) {
        const Op& op = stream[next[r]];
        const int mb = static_cast<int>(op.microbatch);
        const int stage = stage_of(rank, op.chunk);
        std::vector<std::tuple<Pass, int, int>> deps;
        Pass pass = kForward;
        int duration = times.forward;
        if (op.kind == OpKind::Forward) {
          if (stage > 0) deps.emplace_back(kForward, mb, stage - 1);
        } else if (op.kind == OpKind::Backward || op.kind == OpKind::BackwardInput) {
          pass = kBackward;
          duration = op.kind == OpKind::Backward ? times.backward : times.input;
          if (stage == stages - 1) {
            deps.emplace_back(kForward, mb, stage);  // the loss: the last stage's backward follows its forward
          } else {
            deps.emplace_back(kBackward, mb, stage + 1);
          }
        } else {
          pass = kWeight;
          duration = times.weight;
          deps.emplace_back(kBackward, mb, stage);
        }
        int start = clock[r];
        bool ready = true;
        for (const auto& dep : deps) {
          const auto it = end.find(dep);
          if (it == end.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready) break;
        if (first[r] < 0) first[r] = start;
        clock[r] = start + duration;
        busy[r] += duration;
        end[{pass, mb, stage}] = clock[r];
        ++next[r];
        progress = true;
      }
    }
  }
  int idle = 0;
  for (int rank = 0; rank < p; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    EXPECT_EQ(next[r], program.streams[r].size()) << "rank " << rank << " stalls: the order deadlocks";
    idle = std::max(idle, clock[r] - first[r] - busy[r]);
  }
  return idle;
}

// ------------------------------------------------------------------------------------------------
// Orders.

// GPipe: every rank runs all forwards, then all backwards. GPipe (Huang et al., NeurIPS 2019, Figure 2c)
// fixes only that; the backward order is PyTorch's ScheduleGPipe (torch/distributed/pipelining/
// schedules.py), which runs them in microbatch order, as ../shared/reference/schedules.md A.1 notes.
TEST(PublishedOrders, GPipe) {
  const std::string every_rank = "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7";
  const Program program = make_gpipe(shape(ScheduleKind::GPipe, 4, 8));
  const std::vector<std::string> published{every_rank, every_rank, every_rank, every_rank};
  EXPECT_TRUE(orders_match(program, published));
}

// 1F1B (PipeDream-Flush): Narayanan et al., SC21, Figure 4 top (4 devices, 8 microbatches); PyTorch
// Schedule1F1B; rule in ../shared/reference/schedules.md A.2 (Megatron's warm-up p - i - 1 forwards,
// then F/B pairs, then the cool-down backwards).
TEST(PublishedOrders, OneFOneB) {
  const Program program = make_1f1b(shape(ScheduleKind::OneFOneB, 4, 8));
  const std::vector<std::string> published{
      "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7",
      "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7",
      "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7",
      "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7",
  };
  EXPECT_TRUE(orders_match(program, published));
}

// Interleaved 1F1B, p = 4, v = 2, m = 8: Narayanan et al., SC21, Figure 4 bottom (the same 4 devices and
// 8 microbatches, 2 chunks each). Written out with the rule of ../shared/reference/schedules.md A.3, which
// Megatron-LM and PyTorch's ScheduleInterleaved1F1B share: forwards take microbatches in rounds of p
// (chunk 0 of microbatches 0-3, chunk 1 of 0-3, chunk 0 of 4-7, chunk 1 of 4-7), backwards the same
// rounds with the chunks reversed; rank i warms up with 2(p - i - 1) + (v - 1)p forwards (10, 8, 6, 4),
// then alternates F and B, then drains the backwards. The figure is the source of the shape (4, 2, 8) and
// of the depth-first rounds; the cell-by-cell order is the rule's, written out by hand.
TEST(PublishedOrders, Interleaved1F1B) {
  const Program program = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, 4, 8, 2, 4));
  const std::vector<std::string> published{
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 F5.0 F6.0 B0.1 F7.0 B1.1 F4.1 B2.1 F5.1 B3.1 F6.1 B0.0 "
      "F7.1 B1.0 B2.0 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 F3.1 F4.0 B0.1 F5.0 B1.1 F6.0 B2.1 F7.0 B3.1 F4.1 B0.0 F5.1 B1.0 "
      "F6.1 B2.0 F7.1 B3.0 B4.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 F2.1 B0.1 F3.1 B1.1 F4.0 B2.1 F5.0 B3.1 F6.0 B0.0 F7.0 B1.0 F4.1 B2.0 "
      "F5.1 B3.0 F6.1 B4.1 F7.1 B5.1 B6.1 B7.1 B4.0 B5.0 B6.0 B7.0",
      "F0.0 F1.0 F2.0 F3.0 F0.1 B0.1 F1.1 B1.1 F2.1 B2.1 F3.1 B3.1 F4.0 B0.0 F5.0 B1.0 F6.0 B2.0 F7.0 B3.0 "
      "F4.1 B4.1 F5.1 B5.1 F6.1 B6.1 F7.1 B7.1 B4.0 B5.0 B6.0 B7.0",
  };
  EXPECT_TRUE(orders_match(program, published));
}

// ZB-H1, p = 4, m = 8: Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Figure 3 (the handcrafted
// schedule with 1F1B's memory). Written out with the rule ../shared/reference/schedules.md A.4 reconstructs
// from that figure (and checks against the paper's Table 5): 1F1B's order with the input-gradient pass
// for B, W(j) right after I(j + i) on rank i, the remaining W at the end; so the last rank's first W
// waits for its p-th I.
TEST(PublishedOrders, ZbH1) {
  const Program program = make_zb_h1(shape(ScheduleKind::ZbH1, 4, 8));
  const std::vector<std::string> published{
      "F0 F1 F2 F3 I0 W0 F4 I1 W1 F5 I2 W2 F6 I3 W3 F7 I4 W4 I5 W5 I6 W6 I7 W7",
      "F0 F1 F2 I0 F3 I1 W0 F4 I2 W1 F5 I3 W2 F6 I4 W3 F7 I5 W4 I6 W5 I7 W6 W7",
      "F0 F1 I0 F2 I1 F3 I2 W0 F4 I3 W1 F5 I4 W2 F6 I5 W3 F7 I6 W4 I7 W5 W6 W7",
      "F0 I0 F1 I1 F2 I2 F3 I3 W0 F4 I4 W1 F5 I5 W2 F6 I6 W3 F7 I7 W4 W5 W6 W7",
  };
  EXPECT_TRUE(orders_match(program, published));
}

// ZB-H2, p = 4, m = 8: the same paper, Figure 3 (the handcrafted schedule with about twice 1F1B's memory),
// via ../shared/reference/schedules.md A.4: rank i warms up with 2(p - i) - 1 forwards (7, 5, 3, 1), then
// for each k: I(k), W(k - 2i) once k >= 2i, the next forward if any; then the remaining W. The W passes
// form the figure's parallelogram: rank 0 runs its first W right after its first I, rank i after its
// (2i + 1)-th.
TEST(PublishedOrders, ZbH2) {
  const Program program = make_zb_h2(shape(ScheduleKind::ZbH2, 4, 8));
  const std::vector<std::string> published{
      "F0 F1 F2 F3 F4 F5 F6 I0 W0 F7 I1 W1 I2 W2 I3 W3 I4 W4 I5 W5 I6 W6 I7 W7",
      "F0 F1 F2 F3 F4 I0 F5 I1 F6 I2 W0 F7 I3 W1 I4 W2 I5 W3 I6 W4 I7 W5 W6 W7",
      "F0 F1 F2 I0 F3 I1 F4 I2 F5 I3 F6 I4 W0 F7 I5 W1 I6 W2 I7 W3 W4 W5 W6 W7",
      "F0 I0 F1 I1 F2 I2 F3 I3 F4 I4 F5 I5 F6 I6 W0 F7 I7 W1 W2 W3 W4 W5 W6 W7",
  };
  EXPECT_TRUE(orders_match(program, published));
}

// V-Half and V-Min: Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024 (arXiv
// 2405.15362). The paper draws the building blocks and the squeezed schedules at sizes and resolutions
// that leave cells ambiguous, and ../shared/reference/schedules.md gives only their bubble and memory.
// The orders below therefore come from the authors' published implementation instead: sail-sg/zero-bubble-pipeline-parallelism,
// megatron/core/pipeline_parallel/zerobubble/scheduler/zbv_greedy.py, PipelineGraph with mem_config
// "half" or "min", unit F, B and W costs and no communication, each stage's stage_order as
// create_schedule reads it; that file was run on its own, outside mpsim, and its output copied here.
// Its pass types F f B b W w are written F.0 F.1 I.1 I.0 W.1 W.0 (its "B" is the input-gradient pass of
// the V's far chunk, chunk 1). p = 4 takes V-Half's extra gap in the block (p even) and not V-Min's;
// p = 3 the other way round (3 divides p).
TEST(PublishedOrders, VHalf) {
  {
    const Program program = make_v_half(shape(ScheduleKind::VHalf, 4, 8, 2));
    const std::vector<std::string> published{
        "F0.0 F1.0 F2.0 F3.0 F4.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 F2.1 I0.0 I2.1 W2.1 F3.1 W0.0 F5.0 I1.0 I3.1 "
        "W3.1 F4.1 W1.0 F6.0 I2.0 I4.1 W4.1 F5.1 W2.0 F7.0 I3.0 I5.1 W5.1 F6.1 I6.1 W6.1 I4.0 W3.0 W4.0 F7.1 "
        "I7.1 I5.0 W7.1 I6.0 W5.0 W6.0 I7.0 W7.0",
        "F0.0 F1.0 F2.0 F3.0 F0.1 F1.1 I0.1 W0.1 F2.1 I1.1 W1.1 I0.0 W0.0 F4.0 F3.1 I2.1 W2.1 I1.0 W1.0 F5.0 "
        "F4.1 I3.1 W3.1 I2.0 W2.0 F6.0 F5.1 I4.1 W4.1 I3.0 F7.0 W3.0 F6.1 I5.1 W5.1 I4.0 I6.1 W6.1 F7.1 W4.0 "
        "I5.0 I7.1 I6.0 W7.1 W5.0 W6.0 I7.0 W7.0",
        "F0.0 F1.0 F2.0 F0.1 F1.1 F2.1 I0.1 W0.1 F3.0 I1.1 I0.0 W1.1 W0.0 F3.1 F4.0 I1.0 I2.1 W2.1 F4.1 W1.0 "
        "F5.0 I2.0 I3.1 W3.1 F5.1 W2.0 F6.0 I3.0 I4.1 W4.1 F6.1 W3.0 F7.0 I4.0 I5.1 W5.1 F7.1 I6.1 I5.0 W6.1 "
        "I6.0 I7.1 W7.1 W4.0 I7.0 W5.0 W6.0 W7.0",
        "F0.0 F0.1 F1.0 F1.1 F2.0 F2.1 I0.1 W0.1 I0.0 W0.0 F3.0 F3.1 I1.1 W1.1 I1.0 W1.0 F4.0 F4.1 I2.1 W2.1 "
        "I2.0 W2.0 F5.0 F5.1 I3.1 W3.1 I3.0 F6.0 W3.0 F6.1 I4.1 I4.0 W4.1 F7.0 W4.0 F7.1 I5.1 I5.0 I6.1 I6.0 "
        "W5.1 W6.1 I7.1 I7.0 W7.1 W5.0 W6.0 W7.0",
    };
    EXPECT_TRUE(orders_match(program, published));
  }
  {
    const Program program = make_v_half(shape(ScheduleKind::VHalf, 3, 6, 2));
    const std::vector<std::string> published{
        "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 I0.0 W0.0 F3.0 F2.1 I2.1 W2.1 I1.0 W1.0 F4.0 F3.1 I3.1 "
        "W3.1 I2.0 W2.0 F5.0 F4.1 I4.1 W4.1 I3.0 W3.0 F5.1 I5.1 I4.0 W5.1 W4.0 I5.0 W5.0",
        "F0.0 F1.0 F0.1 F1.1 I0.1 W0.1 F2.0 I0.0 I1.1 W1.1 F2.1 W0.0 F3.0 I1.0 I2.1 W2.1 F3.1 W1.0 F4.0 I2.0 "
        "I3.1 W3.1 F4.1 W2.0 F5.0 I3.0 I4.1 W4.1 F5.1 W3.0 I4.0 I5.1 W5.1 W4.0 I5.0 W5.0",
        "F0.0 F0.1 F1.0 F1.1 I0.1 W0.1 I0.0 W0.0 F2.0 F2.1 I1.1 W1.1 I1.0 W1.0 F3.0 F3.1 I2.1 W2.1 I2.0 W2.0 "
        "F4.0 F4.1 I3.1 I3.0 W3.1 F5.0 W3.0 F5.1 I4.1 I4.0 W4.1 W4.0 I5.1 I5.0 W5.1 W5.0",
    };
    EXPECT_TRUE(orders_match(program, published));
  }
}

// V-Min: the same paper and implementation (mem_config "min"); see VHalf above.
TEST(PublishedOrders, VMin) {
  {
    const Program program = make_v_min(shape(ScheduleKind::VMin, 4, 8, 2));
    const std::vector<std::string> published{
        "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 I1.1 W1.1 I0.0 W0.0 F3.0 F2.1 I2.1 I1.0 W2.1 W1.0 F4.0 F3.1 I3.1 "
        "I2.0 W3.1 W2.0 F5.0 F4.1 I4.1 I3.0 W4.1 W3.0 F6.0 F5.1 I5.1 I4.0 W5.1 W4.0 F7.0 F6.1 I6.1 I5.0 W6.1 "
        "W5.0 F7.1 I7.1 I6.0 W7.1 W6.0 I7.0 W7.0",
        "F0.0 F1.0 F0.1 F1.1 I0.1 W0.1 F2.0 I0.0 I1.1 W1.1 W0.0 F2.1 F3.0 I1.0 I2.1 W2.1 W1.0 F3.1 F4.0 I2.0 "
        "I3.1 W3.1 W2.0 F4.1 F5.0 I3.0 I4.1 W4.1 W3.0 F5.1 F6.0 I4.0 I5.1 W5.1 W4.0 F6.1 F7.0 I5.0 I6.1 W6.1 "
        "W5.0 F7.1 I6.0 I7.1 W7.1 W6.0 I7.0 W7.0",
        "F0.0 F1.0 F0.1 F1.1 I0.1 W0.1 F2.0 I0.0 W0.0 I1.1 F2.1 W1.1 I1.0 F3.0 W1.0 I2.1 F3.1 W2.1 I2.0 F4.0 "
        "W2.0 I3.1 F4.1 W3.1 I3.0 F5.0 W3.0 I4.1 F5.1 W4.1 I4.0 F6.0 W4.0 I5.1 F6.1 W5.1 I5.0 F7.0 W5.0 I6.1 "
        "F7.1 W6.1 I6.0 W6.0 I7.1 W7.1 I7.0 W7.0",
        "F0.0 F0.1 F1.0 F1.1 I0.1 I0.0 W0.1 W0.0 F2.0 F2.1 I1.1 I1.0 W1.1 W1.0 F3.0 F3.1 I2.1 I2.0 W2.1 W2.0 "
        "F4.0 F4.1 I3.1 I3.0 W3.1 W3.0 F5.0 F5.1 I4.1 I4.0 W4.1 W4.0 F6.0 F6.1 I5.1 I5.0 W5.1 W5.0 F7.0 F7.1 "
        "I6.1 I6.0 W6.1 W6.0 I7.1 I7.0 W7.1 W7.0",
    };
    EXPECT_TRUE(orders_match(program, published));
  }
  {
    const Program program = make_v_min(shape(ScheduleKind::VMin, 3, 6, 2));
    const std::vector<std::string> published{
        "F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 I0.0 I1.1 W1.1 W0.0 F2.1 F3.0 I1.0 I2.1 W2.1 W1.0 F3.1 F4.0 I2.0 "
        "I3.1 W3.1 W2.0 F4.1 F5.0 I3.0 I4.1 W4.1 W3.0 F5.1 I5.1 I4.0 W5.1 W4.0 I5.0 W5.0",
        "F0.0 F1.0 F0.1 F1.1 I0.1 W0.1 I0.0 F2.0 W0.0 I1.1 F2.1 W1.1 I1.0 F3.0 W1.0 I2.1 F3.1 W2.1 I2.0 F4.0 "
        "W2.0 I3.1 F4.1 W3.1 I3.0 F5.0 W3.0 I4.1 F5.1 W4.1 I4.0 I5.1 W5.1 W4.0 I5.0 W5.0",
        "F0.0 F0.1 F1.0 F1.1 I0.1 I0.0 W0.1 W0.0 F2.0 F2.1 I1.1 I1.0 W1.1 W1.0 F3.0 F3.1 I2.1 I2.0 W2.1 W2.0 "
        "F4.0 F4.1 I3.1 I3.0 W3.1 W3.0 F5.0 F5.1 I4.1 I4.0 W4.1 W4.0 I5.1 I5.0 W5.1 W5.0",
    };
    EXPECT_TRUE(orders_match(program, published));
  }
}

// ------------------------------------------------------------------------------------------------
// Bubbles from the papers' closed forms, the generated orders replayed with replay_idle above.

// GPipe and 1F1B: bubble (p - 1)(t_f + t_b), a fraction (p - 1)/(m + p - 1) of the step (SC21 section
// 2.2.1). With t_f = t_b = 1 the step is 2(m + p - 1).
TEST(PublishedBubbles, GPipeAndOneFOneB) {
  const PassTimes equal{.forward = 1, .backward = 1, .input = 1, .weight = 1};
  for (const int p : {2, 4, 8}) {
    for (const int m : {p, 2 * p, 3 * p + 1}) {
      const double step = 2.0 * (m + p - 1);
      const double published = (p - 1.0) / (m + p - 1.0);
      for (const ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
        const int idle = replay_idle(make_program(shape(kind, p, m)), false, equal);
        EXPECT_EQ(idle, 2 * (p - 1)) << plan::to_string(kind) << " p=" << p << " m=" << m;
        EXPECT_DOUBLE_EQ(idle / step, published) << plan::to_string(kind) << " p=" << p << " m=" << m;
      }
    }
  }
}

// Interleaved 1F1B: bubble (p - 1)(t_f + t_b)/v, i.e. (p - 1)/(v m) of the ideal time m(t_f + t_b)
// (SC21 section 2.2.2; Llama 3 section 3.3.2 writes (PP - 1)/(V M)). A chunk's passes take 1, so a whole
// stage's t_f = t_b = v. SC21 requires m to be a multiple of p.
TEST(PublishedBubbles, Interleaved1F1B) {
  const PassTimes equal{.forward = 1, .backward = 1, .input = 1, .weight = 1};
  for (const int p : {2, 4}) {
    for (const int v : {2, 3, 4}) {
      for (const int m : {p, 2 * p, 4 * p}) {
        const Program program = make_interleaved_1f1b(shape(ScheduleKind::Interleaved1F1B, p, m, v, p));
        const double ideal = 2.0 * v * m;
        EXPECT_DOUBLE_EQ(replay_idle(program, false, equal) / ideal, (p - 1.0) / (v * m))
            << "p=" << p << " v=" << v << " m=" << m;
      }
    }
  }
}

// Zero Bubble, Table 2: bubbles (p - 1)(T_F + T_B + T_W) for 1F1B, (p - 1)(T_F + T_B - T_W) for ZB-H1 and
// (p - 1)(T_F + T_B - 2T_W) for ZB-H2, T_B the input-gradient pass, communication ignored. The expressions
// assume W no longer than F (the paper's Table 1 puts T_W below T_F); where W outlasts F they undercount
// (ZB-H2's even goes negative), so the times below keep W <= F: equal times (the handcrafted design point,
// where ZB-H1 idles a third of 1F1B and ZB-H2 not at all), two small integer mixes, and Table 9's profiled
// 1.5B times in 0.1 ms (18.5, 18.1, 9.3 ms; zero_bubble.yaml).
TEST(PublishedBubbles, ZeroBubbleHandcrafted) {
  const std::vector<std::tuple<int, int, int>> mixes{{1, 1, 1}, {3, 4, 2}, {2, 3, 1}, {185, 181, 93}};
  for (const auto& [f, b, w] : mixes) {
    const PassTimes times{.forward = f, .backward = b + w, .input = b, .weight = w};
    for (const int p : {2, 4, 8}) {
      for (const int m : {2 * p, 3 * p, 4 * p + 1}) {
        const int one_f_one_b = replay_idle(make_1f1b(shape(ScheduleKind::OneFOneB, p, m)), false, times);
        const int h1 = replay_idle(make_zb_h1(shape(ScheduleKind::ZbH1, p, m)), false, times);
        const int h2 = replay_idle(make_zb_h2(shape(ScheduleKind::ZbH2, p, m)), false, times);
        const std::string at = "F, B, W = " + std::to_string(f) + ", " + std::to_string(b) + ", " + std::to_string(w) +
                               "; p=" + std::to_string(p) + " m=" + std::to_string(m);
        EXPECT_EQ(one_f_one_b, (p - 1) * (f + b + w)) << at;
        EXPECT_EQ(h1, (p - 1) * (f + b - w)) << at;
        EXPECT_EQ(h2, (p - 1) * (f + b - 2 * w)) << at;
        if (f == b && b == w) {
          EXPECT_EQ(3 * h1, one_f_one_b) << at;
          EXPECT_EQ(h2, 0) << at;
        }
      }
    }
  }
}

// V-Half and V-Min, bubble time: with equal F, B, W the controllable-memory paper puts them at about half
// and two thirds of 1F1B's bubble. A whole stage's passes take two chunk passes here, so 1F1B's
// (p - 1)(T_F + T_B + T_W) is 6(p - 1) chunk passes, and half and two thirds of it are 3(p - 1) and
// 4(p - 1). The paper says "about", so they are upper bounds here (docs/schedules.md tabulates the exact
// counts, which come from the implementation and are deliberately not used).
TEST(PublishedBubbles, VHalfAndVMin) {
  const PassTimes equal{.forward = 1, .backward = 2, .input = 1, .weight = 1};
  for (const int p : {2, 3, 4, 6, 8}) {
    for (const int m : {2 * p, 3 * p, 4 * p}) {
      const int one_f_one_b = 6 * (p - 1);
      const int v_half = replay_idle(make_v_half(shape(ScheduleKind::VHalf, p, m, 2)), true, equal);
      const int v_min = replay_idle(make_v_min(shape(ScheduleKind::VMin, p, m, 2)), true, equal);
      EXPECT_LE(v_half, one_f_one_b / 2) << "p=" << p << " m=" << m;
      EXPECT_LE(v_min, 2 * one_f_one_b / 3) << "p=" << p << " m=" << m;
      EXPECT_GT(v_half, 0) << "p=" << p << " m=" << m;  // neither is a zero-bubble schedule
      EXPECT_GT(v_min, 0) << "p=" << p << " m=" << m;
    }
  }
}

/// Whether a bubble of `idle` passes beside the 6m passes of work is a larger rate, idle / (6m + idle),
/// than (num / den) times 1F1B's rate (p - 1)/(m + p - 1). Integers, so that ties are ties.
bool above_readme_rate(int idle, int p, int m, int num, int den) {
  return std::int64_t{idle} * den * (m + p - 1) > std::int64_t{num} * (p - 1) * (6 * m + idle);
}

// V-Half and V-Min, bubble rate: the zero-bubble repository's README (quoted in
// ../shared/reference/schedules.md A.4) gives B/2 and 2B/3 (+ an O(n) overhead for V-Min), B being 1F1B's
// rate. As rates these are tighter than half and two thirds of the bubble time, and docs/schedules.md
// documents where the squeezed schedules sit a little above them (its table: V-Half at p = 5 and 7,
// V-Min at p = 7 and 8); the authors' zbv_greedy.py, run at the same shapes, lands on the same side of
// them. Asserted as documented: at most the README's rate everywhere else in that table, above it there.
TEST(PublishedBubbles, VHalfAndVMinAgainstTheReadmeRates) {
  const PassTimes equal{.forward = 1, .backward = 2, .input = 1, .weight = 1};
  struct Case {
    int p;
    int m;
    bool v_half_above;  // documented in docs/schedules.md's V-Half / V-Min table
    bool v_min_above;
  };
  const std::vector<Case> table{{2, 8, false, false},  {3, 12, false, false}, {4, 16, false, false},
                                {4, 32, false, false}, {5, 20, true, false},  {6, 24, false, false},
                                {7, 28, true, true},   {8, 32, false, true},  {8, 64, false, false}};
  for (const Case& c : table) {
    const int v_half = replay_idle(make_v_half(shape(ScheduleKind::VHalf, c.p, c.m, 2)), true, equal);
    const int v_min = replay_idle(make_v_min(shape(ScheduleKind::VMin, c.p, c.m, 2)), true, equal);
    EXPECT_EQ(above_readme_rate(v_half, c.p, c.m, 1, 2), c.v_half_above) << "V-Half p=" << c.p << " m=" << c.m;
    EXPECT_EQ(above_readme_rate(v_min, c.p, c.m, 2, 3), c.v_min_above) << "V-Min p=" << c.p << " m=" << c.m;
  }
}

}  // namespace
}  // namespace mpsim::schedule::published
