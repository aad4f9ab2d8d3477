#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"

namespace mpsim::schedule {

// DeepSeek's DualPipe (github.com/deepseek-ai/DualPipe, dualpipe.py) runs on rank r the eight steps
// of DualPipeV with the half rank min(r, p - 1 - r) of p/2 ranks and m/2 microbatches per direction.
// The V's two legs become the two directions: its first leg is the direction that enters at the
// rank's nearer end, so ranks r and p - 1 - r run the same order with the directions swapped.
Program make_dualpipe(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::DualPipe);
  const int p = shape.stages;
  const int half = shape.microbatches / 2;
  PipelineShape half_shape = shape;
  half_shape.kind = plan::ScheduleKind::DualPipeV;
  half_shape.stages = p / 2;
  half_shape.microbatches = half;
  const Program v = make_dualpipe_v(half_shape);
  for (int rank = 0; rank < p; ++rank) {
    const bool lower_half = rank < p / 2;
    const auto& legs = v.streams[static_cast<std::size_t>(lower_half ? rank : p - 1 - rank)];
    // Leg `leg` of the V on this rank: its chunk, and the first microbatch of its direction.
    const auto chunk_of_leg = [&](int leg) { return (leg == 0) == lower_half ? 0 : 1; };
    const auto first_microbatch = [&](int chunk) { return chunk == 0 ? 0 : half; };
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    stream.reserve(legs.size());
    for (Op op : legs) {
      op.chunk = static_cast<std::uint16_t>(chunk_of_leg(op.chunk));
      op.microbatch += static_cast<std::uint32_t>(first_microbatch(op.chunk));
      if (op.kind == OpKind::ForwardBackward) {
        op.backward_chunk = static_cast<std::uint16_t>(chunk_of_leg(op.backward_chunk));
        op.backward_microbatch += static_cast<std::uint32_t>(first_microbatch(op.backward_chunk));
      }
      stream.push_back(op);
    }
  }
  return program;
}

}  // namespace mpsim::schedule
