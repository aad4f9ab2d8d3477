#include <algorithm>
#include <deque>
#include <map>
#include <utility>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

namespace {

// The building blocks of "Pipeline Parallelism with Controllable Memory" (Qi et al., arXiv 2405.15362),
// as its repository lays them out (zbv_greedy.py): on a V of two chunks per rank, one microbatch's
// four passes on rank i sit at fixed slots of a period of 6 (one pass each), repeated for every
// microbatch; the weight passes fill the free slots. The block's lifespan sets the activations a rank
// holds. Slots, for rank i of p:
//   V-Min:  F0 at i,   F1 at 2p - 1 - i, I1 at 2p + g + i,      I0 at 4p + g - 1 - i (g = 2 if 3 | p, else 0)
//   V-Half: F0 at 2i,  F1 at 3p - 2 - i, I1 at 3p + g + 2i - 1, I0 at 6p + g - i - 2 (g = 3 if 2 | p, else 0)
struct Slots {
  int forward0, forward1, input1, input0;
};

Slots slots(bool half, int p, int i) {
  if (half) {
    const int g = p % 2 == 0 ? 3 : 0;
    return {2 * i, 3 * p - 2 - i, 3 * p + g + 2 * i - 1, 6 * p + g - i - 2};
  }
  const int g = p % 3 == 0 ? 2 : 0;
  return {i, 2 * p - 1 - i, 2 * p + g + i, 4 * p + g - 1 - i};
}

constexpr int kPeriod = 6;

Program make_v_memory(const PipelineShape& shape, plan::ScheduleKind kind) {
  Program program = detail::empty_program(shape, kind);
  const int p = shape.stages;
  const int m = shape.microbatches;
  for (int rank = 0; rank < p; ++rank) {
    const Slots s = slots(kind == plan::ScheduleKind::VHalf, p, rank);
    std::map<int, Op> by_slot;
    for (int k = 0; k < m; ++k) {
      by_slot.emplace(s.forward0 + kPeriod * k, compute_op(OpKind::Forward, k, 0));
      by_slot.emplace(s.forward1 + kPeriod * k, compute_op(OpKind::Forward, k, 1));
      by_slot.emplace(s.input1 + kPeriod * k, compute_op(OpKind::BackwardInput, k, 1));
      by_slot.emplace(s.input0 + kPeriod * k, compute_op(OpKind::BackwardInput, k, 0));
    }
    // Weight passes into the free slots, chunk 1's first (the repository's put_w), the rest at the end.
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    std::deque<int> pending[2];
    const int last = by_slot.rbegin()->first;
    for (int t = 0; t <= last; ++t) {
      const auto it = by_slot.find(t);
      if (it != by_slot.end()) {
        stream.push_back(it->second);
        if (it->second.kind == OpKind::BackwardInput) pending[it->second.chunk].push_back(static_cast<int>(it->second.microbatch));
        continue;
      }
      for (const int chunk : {1, 0}) {
        if (pending[chunk].empty()) continue;
        stream.push_back(compute_op(OpKind::BackwardWeight, pending[chunk].front(), chunk));
        pending[chunk].pop_front();
        break;
      }
    }
    for (const int chunk : {1, 0}) {
      for (const int k : pending[chunk]) stream.push_back(compute_op(OpKind::BackwardWeight, k, chunk));
    }
  }
  return program;
}

}  // namespace

Program make_v_half(const PipelineShape& shape) { return make_v_memory(shape, plan::ScheduleKind::VHalf); }
Program make_v_min(const PipelineShape& shape) { return make_v_memory(shape, plan::ScheduleKind::VMin); }

}  // namespace mpsim::schedule
