#pragma once
/// Short constructors for ops, so generators, passes and tests read like the text format.
#include <cstdint>

#include "sim/schedule/program.h"

namespace mpsim::schedule {

/// A compute op (F, B, I or W) of microbatch `microbatch` on chunk `chunk` of the rank.
[[nodiscard]] constexpr Op compute_op(OpKind kind, int microbatch, int chunk = 0) noexcept {
  Op op;
  op.kind = kind;
  op.microbatch = static_cast<std::uint32_t>(microbatch);
  op.chunk = static_cast<std::uint16_t>(chunk);
  return op;
}

/// An F&B pair: the forward of (`forward_microbatch`, `forward_chunk`) beside the fused
/// backward of (`backward_microbatch`, `backward_chunk`).
[[nodiscard]] constexpr Op forward_backward_op(int forward_microbatch, int forward_chunk, int backward_microbatch,
                                               int backward_chunk) noexcept {
  Op op = compute_op(OpKind::ForwardBackward, forward_microbatch, forward_chunk);
  op.backward_microbatch = static_cast<std::uint32_t>(backward_microbatch);
  op.backward_chunk = static_cast<std::uint16_t>(backward_chunk);
  return op;
}

/// A Send or Recv of `microbatch`'s data for the local chunk `chunk`, to or from pipeline rank `peer`.
[[nodiscard]] constexpr Op comm_op(OpKind kind, int microbatch, int chunk, int peer) noexcept {
  Op op = compute_op(kind, microbatch, chunk);
  op.peer = static_cast<std::uint32_t>(peer);
  return op;
}

/// A collective of `bytes` per rank over `group`; `chunk` names the chunk whose tensors it moves.
[[nodiscard]] constexpr Op collective_op(OpKind kind, plan::AxisSet group, Bytes bytes, int chunk = 0) noexcept {
  Op op;
  op.kind = kind;
  op.group = group;
  op.bytes = bytes;
  op.chunk = static_cast<std::uint16_t>(chunk);
  return op;
}

/// `count` collectives of `bytes` inside the layers of `chunk`, for `microbatch`, on `stream`.
[[nodiscard]] constexpr Op layer_collective_op(OpKind kind, plan::AxisSet group, Bytes bytes, int count,
                                               CommStream stream, int microbatch, int chunk) noexcept {
  Op op = collective_op(kind, group, bytes, chunk);
  op.stream = stream;
  op.count = static_cast<std::uint16_t>(count);
  op.microbatch = static_cast<std::uint32_t>(microbatch);
  return op;
}

[[nodiscard]] constexpr Op optimizer_step_op() noexcept {
  Op op;
  op.kind = OpKind::OptimizerStep;
  return op;
}

}  // namespace mpsim::schedule
