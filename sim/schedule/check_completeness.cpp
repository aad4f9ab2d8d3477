#include <cstdint>

#include <fmt/format.h>

#include "sim/schedule/ops.h"
#include "sim/schedule/validate_detail.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule::detail {

namespace {

enum class Backward : std::uint8_t { None, Fused, Input, InputAndWeight };

struct Unit {
  bool forwarded = false;
  std::size_t forward_at = 0;
  Backward backward = Backward::None;
};

}  // namespace

std::optional<ProgramError> check_completeness(const Program& program) {
  const int m = program.shape.microbatches;
  const int v = program.shape.chunks;
  const Naming naming{&program, {}};
  for (int rank = 0; rank < program.shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    std::vector<Unit> units(static_cast<std::size_t>(m) * static_cast<std::size_t>(v));
    const auto text = [&](OpKind k, std::uint32_t mb, int chunk) {
      return op_text(program, compute_op(k, static_cast<int>(mb), chunk));
    };
    for (std::size_t i = 0; i < stream.size(); ++i) {
      if (!is_compute(stream[i].kind) || stream[i].kind == OpKind::OptimizerStep) continue;
      for (const Op& op : compute_parts(stream[i])) {
        if (!route_of(program.shape, static_cast<int>(op.microbatch))
                 .contains(virtual_stage(program.shape, rank, op.chunk))) {
          return naming.error(rank, i, fmt::format("runs microbatch {} on chunk {}, which is not on its route",
                                                   op.microbatch, op.chunk));
        }
        Unit& u = units[op.microbatch * static_cast<std::size_t>(v) + op.chunk];
        switch (op.kind) {
          case OpKind::Forward:
            if (u.forwarded) {
              return naming.error(rank, i, fmt::format("runs a second time (first at op {})", u.forward_at));
            }
            u.forwarded = true;
            u.forward_at = i;
            break;
          case OpKind::Backward:
          case OpKind::BackwardInput:
            if (!u.forwarded) {
              return naming.error(rank, i, fmt::format("runs before {}", text(OpKind::Forward, op.microbatch, op.chunk)));
            }
            if (u.backward != Backward::None) return naming.error(rank, i, "runs a second backward of its microbatch");
            u.backward = op.kind == OpKind::Backward ? Backward::Fused : Backward::Input;
            break;
          case OpKind::BackwardWeight:
            switch (u.backward) {
              case Backward::None:
                return naming.error(rank, i,
                                    fmt::format("runs before {}", text(OpKind::BackwardInput, op.microbatch, op.chunk)));
              case Backward::Fused:
                return naming.error(rank, i,
                                    fmt::format("follows the fused {}", text(OpKind::Backward, op.microbatch, op.chunk)));
              case Backward::InputAndWeight: return naming.error(rank, i, "runs a second time");
              case Backward::Input: u.backward = Backward::InputAndWeight; break;
            }
            break;
          case OpKind::SendActivation:
          case OpKind::RecvActivation:
          case OpKind::SendGrad:
          case OpKind::RecvGrad:
          case OpKind::AllReduce:
          case OpKind::ReduceScatter:
          case OpKind::AllGather:
          case OpKind::AllToAll:
          case OpKind::OptimizerStep:
          case OpKind::ForwardBackward: break;  // compute_parts splits it
        }
      }
    }
    for (int mb = 0; mb < m; ++mb) {
      for (int chunk = 0; chunk < v; ++chunk) {
        if (!route_of(program.shape, mb).contains(virtual_stage(program.shape, rank, chunk))) continue;
        const Unit& u =
            units[static_cast<std::size_t>(mb) * static_cast<std::size_t>(v) + static_cast<std::size_t>(chunk)];
        const auto missing = [&](const std::string& what) {
          return ProgramError{rank, stream.size(), fmt::format("rank {} {}", rank, what)};
        };
        const auto t = [&](OpKind k) { return text(k, static_cast<std::uint32_t>(mb), chunk); };
        if (!u.forwarded) return missing(fmt::format("never runs {}", t(OpKind::Forward)));
        if (u.backward == Backward::None) {
          return missing(fmt::format("never runs {} (or {} and {})", t(OpKind::Backward), t(OpKind::BackwardInput),
                                     t(OpKind::BackwardWeight)));
        }
        if (u.backward == Backward::Input) {
          return missing(fmt::format("runs {} but never {}", t(OpKind::BackwardInput), t(OpKind::BackwardWeight)));
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace mpsim::schedule::detail
