#include <algorithm>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

// The handcrafted ZB-V order of the Zero Bubble paper (arXiv 2401.10241, section 6), in the fixed
// pattern PyTorch's ScheduleZBVZeroBubble lays out. Chunk 0 of a rank is its stage on the way down,
// chunk 1 its stage on the way back up.
Program make_zb_v(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::ZbV);
  const int p = shape.stages;
  const int m = shape.microbatches;
  // The pattern is laid out for at least 2p - 1 microbatches; the passes of the ones that do not
  // exist are left out, which keeps every remaining pass in its place.
  const int n = std::max(2 * p - 1, m);
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    const auto emit = [&](OpKind kind, int microbatch, int chunk) {
      if (microbatch < m) stream.push_back(compute_op(kind, microbatch, chunk));
    };
    int forward0 = 0, forward1 = 0, backward0 = 0, backward1 = 0;
    const auto forward_down = [&] { emit(OpKind::Forward, forward0++, 0); };
    const auto forward_up = [&] { emit(OpKind::Forward, forward1++, 1); };
    const auto backward_up_with_weight = [&] {
      emit(OpKind::BackwardInput, backward1, 1);
      emit(OpKind::BackwardWeight, backward1++, 1);
    };
    const auto backward_down_with_weight = [&] {
      emit(OpKind::BackwardInput, backward0, 0);
      emit(OpKind::BackwardWeight, backward0++, 0);
    };
    // Warm-up: 2p - 1 forwards in all, 2(p - rank) - 1 of them before the first on the way up.
    for (int k = 0; k < 2 * (p - rank) - 1; ++k) forward_down();
    for (int k = 0; k < rank; ++k) {
      forward_up();
      forward_down();
    }
    for (int k = 0; k < p - rank; ++k) {
      forward_up();
      backward_up_with_weight();
    }
    // Steady state: F-I-W groups, alternating chunk 0 and chunk 1, until the forwards run out.
    while (forward1 < forward0 || forward0 < n) {
      if (forward0 < n) forward_down();
      backward_down_with_weight();
      forward_up();
      backward_up_with_weight();
    }
    // Tail: the remaining input gradients first (they are on the other ranks' critical path), the
    // weight gradients filling in after them.
    int weight0 = backward0, weight1 = backward1;
    for (int k = 0; k < rank; ++k) {
      emit(OpKind::BackwardInput, backward0++, 0);
      emit(OpKind::BackwardInput, backward1++, 1);
    }
    for (int k = 0; k < p - rank; ++k) {
      emit(OpKind::BackwardInput, backward0++, 0);
      emit(OpKind::BackwardWeight, weight0++, 0);
    }
    while (weight1 < backward1) emit(OpKind::BackwardWeight, weight1++, 1);
    while (weight0 < backward0) emit(OpKind::BackwardWeight, weight0++, 0);
  }
  return program;
}

}  // namespace mpsim::schedule
