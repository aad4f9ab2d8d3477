// Every generator, over a table of shapes, gives a program that validates as generated, lowered,
// and with gradient synchronization; and holds the activations the reference says it holds.
#include "sim/schedule/validate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/passes.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;
using testing::shape;

/// (p, m) pairs: one rank, one microbatch, fewer microbatches than ranks, m a multiple of p, and not.
constexpr std::pair<int, int> kSizes[] = {{1, 1}, {1, 4}, {2, 1}, {2, 2}, {2, 5}, {3, 2}, {3, 7},
                                          {4, 1}, {4, 3}, {4, 4}, {4, 8}, {4, 9}, {8, 6}, {8, 16}};

std::vector<int> distinct(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<PipelineShape> shape_table() {
  std::vector<PipelineShape> out;
  for (const auto& [p, m] : kSizes) {
    for (const ScheduleKind kind :
         {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::ZbH1, ScheduleKind::ZbH2}) {
      out.push_back(shape(kind, p, m));
    }
    for (const int active : distinct({1, 2, p, p + 2})) {
      out.push_back(shape(ScheduleKind::SageMakerInterleaved, p, m, 1, 0, active));
    }
    out.push_back(shape(ScheduleKind::ZbV, p, m, 2));
    out.push_back(shape(ScheduleKind::VHalf, p, m, 2));
    out.push_back(shape(ScheduleKind::VMin, p, m, 2));
    for (const int limit : distinct({1, p, 2 * p})) {
      PipelineShape s = shape(ScheduleKind::ZbAuto, p, m);
      s.memory_limit = limit;
      out.push_back(s);
    }
    if (m >= 2 * p) out.push_back(shape(ScheduleKind::DualPipeV, p, m, 2));
    for (const int v : {1, 2, 3}) {
      for (const int n : distinct({1, 2, p, m, 2 * m + 1})) {
        // Groups that would deadlock are refused (generators_test); the rest must validate.
        const PipelineShape s = shape(ScheduleKind::Interleaved1F1B, p, m, v, n);
        if (!shape_error(s)) out.push_back(s);
      }
    }
  }
  // DualPipe: p and m even, m >= 2p.
  for (const auto& [p, m] : {std::pair{2, 4}, {2, 6}, {4, 8}, {4, 10}, {6, 12}, {8, 16}, {8, 18}}) {
    out.push_back(shape(ScheduleKind::DualPipe, p, m, 2));
  }
  return out;
}

std::string shape_name(const ::testing::TestParamInfo<PipelineShape>& info) {
  const PipelineShape& s = info.param;
  std::string kind(plan::to_string(s.kind));
  std::replace(kind.begin(), kind.end(), '-', '_');
  std::string name = kind + "_p" + std::to_string(s.stages) + "_m" + std::to_string(s.microbatches);
  if (s.kind == ScheduleKind::Interleaved1F1B) {
    name += "_v" + std::to_string(s.chunks) + "_n" + std::to_string(s.microbatch_group_size);
  }
  if (s.kind == ScheduleKind::SageMakerInterleaved) name += "_a" + std::to_string(s.active_microbatches);
  if (s.kind == ScheduleKind::ZbAuto) name += "_l" + std::to_string(s.memory_limit);
  return name;
}

GradientSync sync_for(const PipelineShape& s, bool overlap, int zero) {
  GradientSync sync;
  sync.gradient_bytes.assign(static_cast<std::size_t>(s.stages),
                             std::vector<Bytes>(static_cast<std::size_t>(s.chunks), Bytes::mib(10)));
  sync.bucket_size = Bytes::mib(4);
  sync.overlap = overlap;
  sync.zero = zero;
  sync.data_parallel = true;
  return sync;
}

std::string describe(const std::optional<ProgramError>& e) { return e ? e->message : "ok"; }

class EveryGenerator : public ::testing::TestWithParam<PipelineShape> {};

TEST_P(EveryGenerator, Validates) {
  const Program program = make_program(GetParam());
  EXPECT_EQ(describe(validate(program)), "ok");
  const Program lowered = lower_comm(program);
  EXPECT_EQ(describe(validate(lowered)), "ok");
  EXPECT_EQ(describe(validate(add_gradient_sync(lowered, sync_for(GetParam(), true, 0)))), "ok");
  EXPECT_EQ(describe(validate(add_gradient_sync(lowered, sync_for(GetParam(), false, 1)))), "ok");
  EXPECT_EQ(describe(validate(add_gradient_sync(program, GradientSync{}))), "ok");
}

TEST_P(EveryGenerator, RunsEachPassOncePerRank) {
  const PipelineShape& s = GetParam();
  const Program program = make_program(s);
  // A bidirectional schedule runs each microbatch on one chunk of every rank.
  const auto passes = static_cast<std::ptrdiff_t>(s.microbatches * (plan::is_bidirectional(s.kind) ? 1 : s.chunks));
  for (const std::vector<Op>& stream : program.streams) {
    const auto count = [&](OpKind kind) {
      std::ptrdiff_t n = 0;
      for (const Op& op : stream) {
        for (const Op& pass : compute_parts(op)) n += pass.kind == kind ? 1 : 0;
      }
      return n;
    };
    EXPECT_EQ(count(OpKind::Forward), passes);
    EXPECT_EQ(count(OpKind::Backward) + count(OpKind::BackwardInput), passes);
    EXPECT_EQ(count(OpKind::BackwardWeight), count(OpKind::BackwardInput));
    if (!splits_backward(s.kind)) {
      EXPECT_EQ(count(OpKind::BackwardInput), 0);
    }
    if (s.kind != ScheduleKind::DualPipeV && s.kind != ScheduleKind::DualPipe) {
      EXPECT_EQ(count(OpKind::Backward) == 0, splits_backward(s.kind));
      EXPECT_EQ(std::count_if(stream.begin(), stream.end(), [](const Op& op) { return op.kind == OpKind::ForwardBackward; }),
                0);
    }
  }
}

TEST_P(EveryGenerator, HoldsTheReferencePeakOfActivations) {
  const PipelineShape& s = GetParam();
  const int p = s.stages;
  const int m = s.microbatches;
  const std::vector<int> peak = peak_in_flight(make_program(s));
  ASSERT_EQ(peak.size(), static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) {
    const int got = peak[static_cast<std::size_t>(i)];
    switch (s.kind) {
      case ScheduleKind::GPipe: EXPECT_EQ(got, m) << "rank " << i; break;
      case ScheduleKind::OneFOneB:
      case ScheduleKind::ZbH1: EXPECT_EQ(got, std::min(p - i, m)) << "rank " << i; break;
      case ScheduleKind::ZbH2: EXPECT_EQ(got, std::min(2 * (p - i) - 1, m)) << "rank " << i; break;
      case ScheduleKind::Interleaved1F1B:
        if (i == 0) {
          const int v = s.chunks;
          EXPECT_EQ(got, std::min(m * v, (p - 1) * 2 + (v - 1) * s.microbatch_group_size + 1));
        }
        break;
      // In chunk-microbatches: ZB-V holds 1F1B's p stage-microbatches (2p chunks) on every rank once
      // m >= 2p - 1; DualPipeV one chunk more (the README's PP + 1 for 2p stages).
      case ScheduleKind::ZbV:
        EXPECT_LE(got, 2 * p) << "rank " << i;
        if (m >= 2 * p - 1) {
          EXPECT_EQ(got, 2 * p) << "rank " << i;
        }
        break;
      case ScheduleKind::DualPipeV: EXPECT_EQ(got, 2 * p + 1) << "rank " << i; break;
      // DualPipe: the README's PP + 1 stage-microbatches on every rank (DualPipeV's on p/2 ranks).
      case ScheduleKind::DualPipe: EXPECT_EQ(got, p + 1) << "rank " << i; break;
      // Its limit counts a microbatch from F to W, which covers F to I.
      case ScheduleKind::ZbAuto: EXPECT_LE(got, s.memory_limit) << "rank " << i; break;
      case ScheduleKind::VHalf:
      case ScheduleKind::VMin: break;  // VSchedules.ControllableMemory measures them
      case ScheduleKind::SageMakerInterleaved:
        EXPECT_LE(got, s.active_microbatches) << "rank " << i;
        // Unit costs bring B0 back to rank 0 at t = 3p - 2; a cap it can fill by then is reached.
        if (i == 0 && s.active_microbatches <= 3 * p - 2) {
          EXPECT_EQ(got, std::min(s.active_microbatches, m));
        }
        break;
    }
  }
}

TEST_P(EveryGenerator, LoweringIsIdempotentAndKeepsTheComputeOrder) {
  const Program program = make_program(GetParam());
  const Program lowered = lower_comm(program);
  EXPECT_EQ(lower_comm(lowered), lowered);
  EXPECT_EQ(to_text(lowered), to_text(program));
}

INSTANTIATE_TEST_SUITE_P(Shapes, EveryGenerator, ::testing::ValuesIn(shape_table()), shape_name);

TEST(PeakInFlight, SageMakerWithACapOfPHoldsLikeOneFOneBOnTheFirstRank) {
  const std::vector<int> peak = peak_in_flight(make_program(shape(ScheduleKind::SageMakerInterleaved, 4, 8, 1, 0, 4)));
  EXPECT_EQ(peak.front(), 4);
}

TEST(PeakInFlight, InterleavedReferenceValue) {
  // p = 4, v = 2, N = p: stage 0 holds v*p + p - 1 = 11 chunk-microbatches (schedules.md A.3).
  const std::vector<int> peak = peak_in_flight(make_program(shape(ScheduleKind::Interleaved1F1B, 4, 16, 2, 4)));
  EXPECT_EQ(peak, (std::vector<int>{11, 9, 7, 5}));
}

}  // namespace
}  // namespace mpsim::schedule
