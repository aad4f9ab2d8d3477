#include <map>
#include <tuple>

#include <fmt/format.h>

#include "sim/schedule/message.h"
#include "sim/schedule/ops.h"
#include "sim/schedule/validate_detail.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule::detail {

namespace {

struct Located {
  int rank = 0;
  std::size_t index = 0;
  friend bool operator==(const Located&, const Located&) = default;
};

/// The Recv that a Send's data should meet, in text form ("rA3.1"), and the rank it belongs on.
std::pair<int, std::string> counterpart(const Program& program, int rank, const Op& send) {
  const PipelineShape& shape = program.shape;
  const bool activation = send.kind == OpKind::SendActivation;
  const int to = virtual_stage(shape, rank, send.chunk) + (activation ? 1 : -1);
  const Op recv = comm_op(activation ? OpKind::RecvActivation : OpKind::RecvGrad, static_cast<int>(send.microbatch),
                          chunk_of(shape, to), rank);
  return {rank_of(shape, to), op_text(program, recv)};
}

struct Ends {
  std::vector<Located> sends;
  std::vector<Located> recvs;
};

}  // namespace

std::optional<ProgramError> check_pairing(const Program& program, const Naming& naming) {
  std::map<MessageId, Ends> channels;
  for (int rank = 0; rank < program.shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < stream.size(); ++i) {
      if (is_send(stream[i].kind)) channels[message_of(program.shape, rank, stream[i])].sends.push_back({rank, i});
      if (is_recv(stream[i].kind)) channels[message_of(program.shape, rank, stream[i])].recvs.push_back({rank, i});
    }
  }
  for (int rank = 0; rank < program.shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (!is_send(op.kind) && !is_recv(op.kind)) continue;
      const Ends& ends = channels.at(message_of(program.shape, rank, op));
      const Located here{rank, i};
      if (is_send(op.kind)) {
        if (ends.sends.front() != here) {
          return naming.error(rank, i,
                              fmt::format("repeats the send at op {}", naming.index(rank, ends.sends.front().index)));
        }
        if (ends.recvs.empty()) {
          const auto [to, recv] = counterpart(program, rank, op);
          return naming.error(rank, i, fmt::format("is never received: rank {} has no {}", to, recv));
        }
      } else {
        if (ends.sends.empty()) return naming.error(rank, i, "waits for a send that never comes");
        if (ends.recvs.front() != here) {
          return naming.error(
              rank, i, fmt::format("repeats the receive at op {}", naming.index(rank, ends.recvs.front().index)));
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<ProgramError> check_dependency_order(const Program& program, const Naming& naming) {
  enum Flag : std::uint8_t { kForwarded = 1, kBackwarded = 2, kActivationIn = 4, kGradIn = 8 };
  const PipelineShape& shape = program.shape;
  const int v = shape.chunks;
  for (int rank = 0; rank < shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    std::vector<std::uint8_t> flags(static_cast<std::size_t>(shape.microbatches) * static_cast<std::size_t>(v));
    const auto flag = [&](std::uint32_t mb, int chunk) -> std::uint8_t& {
      return flags[mb * static_cast<std::size_t>(v) + static_cast<std::size_t>(chunk)];
    };
    for (std::size_t i = 0; i < stream.size(); ++i) {
      for (const Op& op : compute_parts(stream[i])) {  // an F&B pair: its forward, then its backward
        const int vs = virtual_stage(shape, rank, op.chunk);
        const Route route = route_of(shape, static_cast<int>(op.microbatch));
        const auto text = [&](OpKind k, int chunk) {
          return op_text(program, compute_op(k, static_cast<int>(op.microbatch), chunk));
        };
        switch (op.kind) {
          case OpKind::Forward:
            if (route.has_before(vs) && rank_of(shape, vs - 1) != rank && !(flag(op.microbatch, op.chunk) & kActivationIn)) {
              return naming.error(
                  rank, i,
                  fmt::format("runs before its input arrives: no {} before it", text(OpKind::RecvActivation, op.chunk)));
            }
            if (route.has_before(vs) && rank_of(shape, vs - 1) == rank && !(flag(op.microbatch, chunk_of(shape, vs - 1)) & kForwarded)) {
              return naming.error(rank, i,
                                  fmt::format("runs before {}, which feeds it",
                                              text(OpKind::Forward, chunk_of(shape, vs - 1))));
            }
            flag(op.microbatch, op.chunk) |= kForwarded;
            break;
          case OpKind::Backward:
          case OpKind::BackwardInput:
            if (route.has_after(vs) && rank_of(shape, vs + 1) != rank && !(flag(op.microbatch, op.chunk) & kGradIn)) {
              return naming.error(
                  rank, i,
                  fmt::format("runs before its gradient arrives: no {} before it", text(OpKind::RecvGrad, op.chunk)));
            }
            if (route.has_after(vs) && rank_of(shape, vs + 1) == rank &&
                !(flag(op.microbatch, chunk_of(shape, vs + 1)) & kBackwarded)) {
              return naming.error(rank, i,
                                  fmt::format("runs before the backward of {}, which feeds it",
                                              text(OpKind::Forward, chunk_of(shape, vs + 1)).substr(1)));
            }
            flag(op.microbatch, op.chunk) |= kBackwarded;
            break;
          case OpKind::RecvActivation: flag(op.microbatch, op.chunk) |= kActivationIn; break;
          case OpKind::RecvGrad: flag(op.microbatch, op.chunk) |= kGradIn; break;
          case OpKind::SendActivation:
            if (!(flag(op.microbatch, op.chunk) & kForwarded)) {
              return naming.error(rank, i, fmt::format("sends before {} has run", text(OpKind::Forward, op.chunk)));
            }
            break;
          case OpKind::SendGrad:
            if (!(flag(op.microbatch, op.chunk) & kBackwarded)) {
              return naming.error(
                  rank, i,
                  fmt::format("sends before the backward of {} has run", text(OpKind::Forward, op.chunk).substr(1)));
            }
            break;
          case OpKind::BackwardWeight:
          case OpKind::AllReduce:
          case OpKind::ReduceScatter:
          case OpKind::AllGather:
          case OpKind::AllToAll:
          case OpKind::OptimizerStep:
          case OpKind::ForwardBackward: break;  // compute_parts splits it
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace mpsim::schedule::detail
