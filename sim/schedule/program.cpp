#include "sim/schedule/program.h"

#include <fmt/format.h>

#include "sim/plan/plan_check.h"

namespace mpsim::schedule {

std::string_view to_string(CommStream s) noexcept {
  switch (s) {
    case CommStream::Gradient: return "gradient";
    case CommStream::Blocking: return "blocking";
    case CommStream::Overlapped: return "overlapped";
  }
  return "?";
}

PipelineShape shape_of(const plan::Plan& plan) noexcept {
  PipelineShape shape;
  shape.stages = plan.degrees[plan::Axis::Pipeline];
  shape.microbatches = plan.microbatches;
  shape.chunks = plan.virtual_stages;
  shape.kind = plan.schedule;
  shape.microbatch_group_size = plan.microbatch_group_size;
  shape.active_microbatches = plan.active_microbatches;
  shape.memory_limit = plan.zb_memory_limit;
  return shape;
}

PipelineShape shape_of(const plan::PlanSpec& spec) noexcept {
  PipelineShape shape;
  shape.stages = spec.degrees[plan::Axis::Pipeline];
  shape.microbatches = spec.microbatches.value_or(1);
  shape.chunks = spec.virtual_stages;
  shape.kind = spec.schedule;
  shape.microbatch_group_size = plan::microbatch_group_size_of(spec);
  shape.active_microbatches = plan::active_microbatches_of(spec);
  shape.memory_limit = plan::zb_memory_limit_of(spec);
  return shape;
}

std::string to_text(const Op& op, bool with_chunk) {
  const OpTraits& t = traits(op.kind);
  if (is_collective(op.kind) && is_in_layer(op.stream)) {
    return op.count > 1 ? fmt::format("{}:{}*{}", t.text, plan::to_string(op.group), op.count)
                        : fmt::format("{}:{}", t.text, plan::to_string(op.group));
  }
  if (!t.numbered) return std::string(t.text);
  if (op.kind == OpKind::ForwardBackward) {
    const ComputeParts parts = compute_parts(op);
    return fmt::format("{}&{}", to_text(parts.ops[0], with_chunk), to_text(parts.ops[1], with_chunk));
  }
  if (with_chunk) return fmt::format("{}{}.{}", t.text, op.microbatch, op.chunk);
  return fmt::format("{}{}", t.text, op.microbatch);
}

std::string to_text(const Program& program, bool with_comm) {
  const bool with_chunk = program.shape.chunks > 1;
  std::string text;
  for (const std::vector<Op>& stream : program.streams) {
    bool first = true;
    for (const Op& op : stream) {
      if (!with_comm && !is_pass(op.kind)) continue;
      if (!first) text += ' ';
      text += to_text(op, with_chunk);
      first = false;
    }
    text += '\n';
  }
  return text;
}

}  // namespace mpsim::schedule
