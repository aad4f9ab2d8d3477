#include "sim/schedule/program.h"

#include <fmt/format.h>

#include "sim/plan/plan_check.h"

namespace mpsim::schedule {

std::string_view to_string(OpKind k) noexcept {
  switch (k) {
    case OpKind::Forward: return "Forward";
    case OpKind::Backward: return "Backward";
    case OpKind::BackwardInput: return "BackwardInput";
    case OpKind::BackwardWeight: return "BackwardWeight";
    case OpKind::SendActivation: return "SendActivation";
    case OpKind::RecvActivation: return "RecvActivation";
    case OpKind::SendGrad: return "SendGrad";
    case OpKind::RecvGrad: return "RecvGrad";
    case OpKind::AllReduce: return "AllReduce";
    case OpKind::ReduceScatter: return "ReduceScatter";
    case OpKind::AllGather: return "AllGather";
    case OpKind::AllToAll: return "AllToAll";
    case OpKind::OptimizerStep: return "OptimizerStep";
    case OpKind::ForwardBackward: return "ForwardBackward";
  }
  return "?";
}

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

namespace {

/// The letters before the microbatch number; empty for ops that carry no microbatch.
std::string_view prefix(OpKind k) noexcept {
  switch (k) {
    case OpKind::Forward:
    case OpKind::ForwardBackward: return "F";
    case OpKind::Backward: return "B";
    case OpKind::BackwardInput: return "I";
    case OpKind::BackwardWeight: return "W";
    case OpKind::SendActivation: return "sA";
    case OpKind::RecvActivation: return "rA";
    case OpKind::SendGrad: return "sG";
    case OpKind::RecvGrad: return "rG";
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::AllGather:
    case OpKind::AllToAll:
    case OpKind::OptimizerStep: return {};
  }
  return {};
}

std::string_view whole_word(OpKind k) noexcept {
  switch (k) {
    case OpKind::AllReduce: return "AR";
    case OpKind::ReduceScatter: return "RS";
    case OpKind::AllGather: return "AG";
    case OpKind::AllToAll: return "A2A";
    case OpKind::OptimizerStep: return "OPT";
    case OpKind::Forward:
    case OpKind::Backward:
    case OpKind::BackwardInput:
    case OpKind::BackwardWeight:
    case OpKind::SendActivation:
    case OpKind::RecvActivation:
    case OpKind::SendGrad:
    case OpKind::RecvGrad:
    case OpKind::ForwardBackward: return {};
  }
  return {};
}

bool is_pipeline_compute(OpKind k) noexcept { return is_compute(k) && k != OpKind::OptimizerStep; }

}  // namespace

std::string to_text(const Op& op, bool with_chunk) {
  const std::string_view word = whole_word(op.kind);
  if (is_collective(op.kind) && is_in_layer(op.stream)) {
    return op.count > 1 ? fmt::format("{}:{}*{}", word, plan::to_string(op.group), op.count)
                        : fmt::format("{}:{}", word, plan::to_string(op.group));
  }
  if (!word.empty()) return std::string(word);
  if (op.kind == OpKind::ForwardBackward) {
    const ComputeParts parts = compute_parts(op);
    return fmt::format("{}&{}", to_text(parts.ops[0], with_chunk), to_text(parts.ops[1], with_chunk));
  }
  if (with_chunk) return fmt::format("{}{}.{}", prefix(op.kind), op.microbatch, op.chunk);
  return fmt::format("{}{}", prefix(op.kind), op.microbatch);
}

std::string to_text(const Program& program, bool with_comm) {
  const bool with_chunk = program.shape.chunks > 1;
  std::string text;
  for (const std::vector<Op>& stream : program.streams) {
    bool first = true;
    for (const Op& op : stream) {
      if (!with_comm && !is_pipeline_compute(op.kind)) continue;
      if (!first) text += ' ';
      text += to_text(op, with_chunk);
      first = false;
    }
    text += '\n';
  }
  return text;
}

}  // namespace mpsim::schedule
