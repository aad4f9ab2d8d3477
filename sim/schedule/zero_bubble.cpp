#include <algorithm>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

// Both orders are the ones of the Zero Bubble paper's Figure 3 (arXiv 2401.10241), as written out
// in the reference notes; replayed with the paper's profiled times they give its bubble rates.

Program make_zb_h1(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::ZbH1);
  const int m = shape.microbatches;
  for (int rank = 0; rank < shape.stages; ++rank) {
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    for (const detail::Step& step : detail::one_f_one_b_steps(shape.stages, m, rank)) {
      if (step.forward) {
        stream.push_back(compute_op(OpKind::Forward, step.microbatch));
        continue;
      }
      stream.push_back(compute_op(OpKind::BackwardInput, step.microbatch));
      // Rank i keeps i weight passes pending: W(j) follows I(j + i).
      if (step.microbatch >= rank) stream.push_back(compute_op(OpKind::BackwardWeight, step.microbatch - rank));
    }
    for (int j = std::max(0, m - rank); j < m; ++j) stream.push_back(compute_op(OpKind::BackwardWeight, j));
  }
  return program;
}

Program make_zb_h2(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::ZbH2);
  const int p = shape.stages;
  const int m = shape.microbatches;
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    int next_forward = std::min(2 * (p - rank) - 1, m);
    for (int k = 0; k < next_forward; ++k) stream.push_back(compute_op(OpKind::Forward, k));
    const int lag = 2 * rank;  // rank i keeps 2i weight passes pending
    for (int k = 0; k < m; ++k) {
      stream.push_back(compute_op(OpKind::BackwardInput, k));
      if (k >= lag) stream.push_back(compute_op(OpKind::BackwardWeight, k - lag));
      if (next_forward < m) stream.push_back(compute_op(OpKind::Forward, next_forward++));
    }
    for (int j = std::max(0, m - lag); j < m; ++j) stream.push_back(compute_op(OpKind::BackwardWeight, j));
  }
  return program;
}

}  // namespace mpsim::schedule
