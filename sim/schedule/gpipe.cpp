#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

Program make_gpipe(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::GPipe);
  const int m = shape.microbatches;
  for (std::vector<Op>& stream : program.streams) {
    stream.reserve(2 * static_cast<std::size_t>(m));
    for (int mb = 0; mb < m; ++mb) stream.push_back(compute_op(OpKind::Forward, mb));
    // Any backward order gives the same bubble; ascending matches PyTorch's ScheduleGPipe and keeps
    // every rank's backward order equal to the order the gradients arrive in.
    for (int mb = 0; mb < m; ++mb) stream.push_back(compute_op(OpKind::Backward, mb));
  }
  return program;
}

}  // namespace mpsim::schedule
