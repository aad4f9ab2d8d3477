#pragma once
/// One identity for every point-to-point message of a Program: the validator pairs Sends with Recvs
/// by it, the simulator delivers by it, and the executor tags its messages with it.
///
/// A message is a microbatch's activation (or gradient) entering a virtual stage. Its Send and its
/// Recv name the same message: a SendActivation of virtual stage vs and the RecvActivation of vs + 1;
/// a SendGrad of vs and the RecvGrad of vs - 1.
#include <cstdint>

#include "sim/schedule/program.h"

namespace mpsim::schedule {

struct MessageId {
  bool gradient = false;
  std::uint32_t microbatch = 0;
  int receiving_stage = 0;  ///< the virtual stage the data enters
  friend auto operator<=>(const MessageId&, const MessageId&) = default;
};

/// The message a Send or Recv op of `rank` moves. Precondition: is_send(op.kind) || is_recv(op.kind).
[[nodiscard]] MessageId message_of(const PipelineShape& shape, int rank, const Op& op) noexcept;

/// A dense number for `id`, 0 <= n < message_count(shape): 2 x (microbatch x stages + receiving stage)
/// + gradient. The executor's message tag.
[[nodiscard]] std::int64_t message_number(const PipelineShape& shape, const MessageId& id) noexcept;
/// 2 x microbatches x virtual stages: the number of distinct messages a program of `shape` can hold.
[[nodiscard]] std::int64_t message_count(const PipelineShape& shape) noexcept;

}  // namespace mpsim::schedule
