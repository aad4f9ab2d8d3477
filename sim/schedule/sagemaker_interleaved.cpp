#include <cstdint>
#include <limits>
#include <stdexcept>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

// SageMaker model parallelism (smdistributed.modelparallel v1), pipeline "interleaved": "backward
// execution of the microbatches is prioritized whenever possible", with at most
// `active_microbatches` microbatches in execution. The implementation is closed source, so the
// rule is replayed here with unit costs to give a fixed order.
//
// The cap is applied on every rank, but only rank 0 can meet it: a microbatch in flight on rank
// i > 0 (forwarded there, backward not done there) is also in flight on rank 0, so the per-rank
// cap equals SageMaker's cap on microbatches in execution in the whole pipeline.

namespace {

constexpr std::int64_t kForwardTime = 1;
constexpr std::int64_t kBackwardTime = 2;
constexpr std::int64_t kNever = std::numeric_limits<std::int64_t>::max();

struct RankState {
  std::int64_t busy_until = 0;
  int next_forward = 0;         ///< forwards run in microbatch order
  int first_open_backward = 0;  ///< every backward below it is done
  std::vector<bool> backward_done;
  int backwards = 0;
  std::vector<std::int64_t> input_ready;  ///< when F(mb)'s activation is here
  std::vector<std::int64_t> grad_ready;   ///< when B(mb)'s gradient is here
};

}  // namespace

Program make_sagemaker_interleaved(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::SageMakerInterleaved);
  const int p = shape.stages;
  const int m = shape.microbatches;
  const auto mbs = static_cast<std::size_t>(m);
  std::vector<RankState> ranks(static_cast<std::size_t>(p));
  for (RankState& r : ranks) {
    r.backward_done.assign(mbs, false);
    r.input_ready.assign(mbs, kNever);
    r.grad_ready.assign(mbs, kNever);
  }
  ranks[0].input_ready.assign(mbs, 0);

  // Decisions at time t see only data that arrived by t, and anything started at t ends later,
  // so visiting the free ranks in rank order is as good as any order.
  std::int64_t left = 2 * std::int64_t{p} * m;
  for (std::int64_t t = 0; left > 0;) {
    for (int i = 0; i < p; ++i) {
      RankState& r = ranks[static_cast<std::size_t>(i)];
      if (r.busy_until > t) continue;
      std::vector<Op>& stream = program.streams[static_cast<std::size_t>(i)];
      int backward = -1;
      for (int mb = r.first_open_backward; mb < r.next_forward; ++mb) {
        if (!r.backward_done[static_cast<std::size_t>(mb)] && r.grad_ready[static_cast<std::size_t>(mb)] <= t) {
          backward = mb;
          break;
        }
      }
      if (backward >= 0) {
        const auto b = static_cast<std::size_t>(backward);
        r.backward_done[b] = true;
        ++r.backwards;
        while (r.first_open_backward < m && r.backward_done[static_cast<std::size_t>(r.first_open_backward)]) {
          ++r.first_open_backward;
        }
        r.busy_until = t + kBackwardTime;
        if (i > 0) ranks[static_cast<std::size_t>(i - 1)].grad_ready[b] = r.busy_until;
        stream.push_back(compute_op(OpKind::Backward, backward));
        --left;
        continue;
      }
      const bool under_cap = r.next_forward - r.backwards < shape.active_microbatches;
      if (r.next_forward < m && under_cap && r.input_ready[static_cast<std::size_t>(r.next_forward)] <= t) {
        const auto f = static_cast<std::size_t>(r.next_forward);
        r.busy_until = t + kForwardTime;
        if (i + 1 < p) {
          ranks[static_cast<std::size_t>(i + 1)].input_ready[f] = r.busy_until;
        } else {
          r.grad_ready[f] = r.busy_until;  // the last rank's backward needs only its own forward
        }
        stream.push_back(compute_op(OpKind::Forward, r.next_forward++));
        --left;
      }
    }
    // Every arrival is the end of an op in progress, so the next event is the earliest busy rank.
    std::int64_t next = kNever;
    for (const RankState& r : ranks) {
      if (r.busy_until > t && r.busy_until < next) next = r.busy_until;
    }
    if (left > 0 && next == kNever) throw std::logic_error("sagemaker-interleaved replay stalled");
    t = next;
  }
  return program;
}

}  // namespace mpsim::schedule
