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

Program make_interleaved_1f1b(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::Interleaved1F1B);
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
    const std::int64_t formula = std::int64_t{p - rank - 1} * 2 + std::int64_t{v - 1} * shape.microbatch_group_size;
    const int warmup = static_cast<int>(std::min<std::int64_t>(formula, total));
    for (int k = 0; k < warmup; ++k) stream.push_back(forward(k));
    for (int k = 0; k < total - warmup; ++k) {
      stream.push_back(forward(warmup + k));
      stream.push_back(backward(k));
    }
    for (int k = total - warmup; k < total; ++k) stream.push_back(backward(k));
  }
  return program;
}

}  // namespace mpsim::schedule
