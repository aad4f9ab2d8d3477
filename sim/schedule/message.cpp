#include "sim/schedule/message.h"

#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule {

MessageId message_of(const PipelineShape& shape, int rank, const Op& op) noexcept {
  const int vs = virtual_stage(shape, rank, op.chunk);
  MessageId id;
  id.microbatch = op.microbatch;
  id.gradient = op.kind == OpKind::SendGrad || op.kind == OpKind::RecvGrad;
  if (op.kind == OpKind::SendActivation) {
    id.receiving_stage = vs + 1;
  } else if (op.kind == OpKind::SendGrad) {
    id.receiving_stage = vs - 1;
  } else {
    id.receiving_stage = vs;
  }
  return id;
}

std::int64_t message_number(const PipelineShape& shape, const MessageId& id) noexcept {
  return 2 * (static_cast<std::int64_t>(id.microbatch) * virtual_stage_count(shape) + id.receiving_stage) +
         (id.gradient ? 1 : 0);
}

std::int64_t message_count(const PipelineShape& shape) noexcept {
  return 2 * static_cast<std::int64_t>(shape.microbatches) * virtual_stage_count(shape);
}

}  // namespace mpsim::schedule
