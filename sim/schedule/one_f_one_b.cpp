#include <algorithm>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

namespace detail {

std::vector<Step> one_f_one_b_steps(int stages, int microbatches, int rank) {
  const int warmup = std::min(stages - rank - 1, microbatches);
  std::vector<Step> steps;
  steps.reserve(2 * static_cast<std::size_t>(microbatches));
  for (int k = 0; k < warmup; ++k) steps.push_back({true, k});
  for (int k = 0; k < microbatches - warmup; ++k) {
    steps.push_back({true, warmup + k});
    steps.push_back({false, k});
  }
  for (int k = microbatches - warmup; k < microbatches; ++k) steps.push_back({false, k});
  return steps;
}

}  // namespace detail

Program make_1f1b(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::OneFOneB);
  for (int rank = 0; rank < shape.stages; ++rank) {
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    for (const detail::Step& step : detail::one_f_one_b_steps(shape.stages, shape.microbatches, rank)) {
      stream.push_back(compute_op(step.forward ? OpKind::Forward : OpKind::Backward, step.microbatch));
    }
  }
  return program;
}

}  // namespace mpsim::schedule
