#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

// Megatron-LM megatron/core/pipeline_parallel/schedules.py: get_schedule_table,
// get_pp_rank_microbatches and forward_backward_pipelining_with_interleaving.

std::vector<VirtualMicrobatch> virtual_microbatch_table(int microbatches, int chunks, int group_size) {
  if (group_size < 1 || microbatches < 0 || chunks < 0) {
    throw std::invalid_argument("virtual_microbatch_table needs a group size >= 1 and non-negative counts");
  }
  std::vector<VirtualMicrobatch> table;
  table.reserve(static_cast<std::size_t>(microbatches) * static_cast<std::size_t>(chunks));
  // 64-bit so that a group size near INT_MAX cannot overflow.
  for (std::int64_t first = 0; first < microbatches; first += group_size) {
    // Megatron's test `first + N >= m` marks the last group, which takes every microbatch left.
    const std::int64_t end = std::min<std::int64_t>(first + group_size, microbatches);
    for (int chunk = 0; chunk < chunks; ++chunk) {
      for (std::int64_t mb = first; mb < end; ++mb) table.push_back({static_cast<int>(mb), chunk});
    }
  }
  return table;
}

namespace {

/// Megatron's interleaved order; `combined`: one more warmup forward, and each steady-state forward
/// beside the backward after it as one ForwardBackward op (its combined 1F1B).
Program interleaved_order(const PipelineShape& shape, bool combined) {
  Program program = detail::empty_program(shape, shape.kind);
  const int p = shape.stages;
  const int v = shape.chunks;
  const std::vector<VirtualMicrobatch> table =
      virtual_microbatch_table(shape.microbatches, v, shape.microbatch_group_size);
  const int total = static_cast<int>(table.size());
  const auto forward = [&](int k) { return compute_op(OpKind::Forward, table[k].microbatch, table[k].chunk); };
  const auto backward = [&](int k) {
    return compute_op(OpKind::Backward, table[k].microbatch, v - 1 - table[k].chunk);
  };
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    stream.reserve(2 * table.size());
    // With p = 1 Megatron runs no pipeline schedule at all; the same formula (its first term 0)
    // still gives a valid order for v chunks on one rank.
    const std::int64_t formula = std::int64_t{p - rank - 1} * 2 + std::int64_t{v - 1} * shape.microbatch_group_size +
                                 (combined ? 1 : 0);
    const int warmup = static_cast<int>(std::min<std::int64_t>(formula, total));
    for (int k = 0; k < warmup; ++k) stream.push_back(forward(k));
    for (int k = 0; k < total - warmup; ++k) {
      const Op f = forward(warmup + k);
      const Op b = backward(k);
      if (combined) {
        stream.push_back(forward_backward_op(static_cast<int>(f.microbatch), f.chunk, static_cast<int>(b.microbatch),
                                             b.chunk));
      } else {
        stream.push_back(f);
        stream.push_back(b);
      }
    }
    for (int k = total - warmup; k < total; ++k) stream.push_back(backward(k));
  }
  return program;
}

}  // namespace

Program make_interleaved_1f1b(const PipelineShape& shape) {
  PipelineShape interleaved = shape;
  interleaved.kind = plan::ScheduleKind::Interleaved1F1B;
  return interleaved_order(interleaved, false);
}

Program make_combined_1f1b(const PipelineShape& shape) {
  if (shape.stages > 1 && (shape.kind != plan::ScheduleKind::Interleaved1F1B || shape.chunks < 2)) {
    throw std::invalid_argument("the combined 1F1B needs interleaved-1f1b with two or more chunks on a pipeline");
  }
  return interleaved_order(shape, true);
}

}  // namespace mpsim::schedule
