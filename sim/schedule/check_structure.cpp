#include <cstdint>

#include <fmt/format.h>

#include "sim/schedule/validate_detail.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule::detail {

namespace {

/// The virtual stage on the other end of a Send/Recv of virtual stage `vs`.
int other_end(OpKind k, int vs) noexcept {
  return k == OpKind::SendActivation || k == OpKind::RecvGrad ? vs + 1 : vs - 1;
}

}  // namespace

std::optional<ProgramError> check_structure(const Program& program) {
  const PipelineShape& shape = program.shape;
  if (shape.stages < 1 || shape.microbatches < 1 || shape.chunks < 1) {
    return ProgramError{-1, 0,
                        fmt::format("the program's shape ({} stages, {} microbatches, {} chunks) is empty",
                                    shape.stages, shape.microbatches, shape.chunks)};
  }
  if (program.streams.size() != static_cast<std::size_t>(shape.stages)) {
    return ProgramError{-1, 0,
                        fmt::format("the program has {} streams for {} stages", program.streams.size(), shape.stages)};
  }
  const Naming naming{&program, {}};
  for (int rank = 0; rank < shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (!traits(op.kind).numbered) continue;
      for (const Op& part : compute_parts(op)) {
        if (part.chunk >= shape.chunks) {
          return naming.error(rank, i, fmt::format("names chunk {}, but ranks hold {}", part.chunk, shape.chunks));
        }
        if (part.microbatch >= static_cast<std::uint32_t>(shape.microbatches)) {
          return naming.error(
              rank, i, fmt::format("names microbatch {}, but the step has {}", part.microbatch, shape.microbatches));
        }
      }
      if (!is_send(op.kind) && !is_recv(op.kind)) continue;
      const int vs = virtual_stage(shape, rank, op.chunk);
      const int other = other_end(op.kind, vs);
      if (!route_of(shape, static_cast<int>(op.microbatch)).contains(other)) {
        const bool exists = other >= 0 && other < virtual_stage_count(shape);
        return naming.error(rank, i,
                            fmt::format("{} virtual stage {}, which {}", is_send(op.kind) ? "sends to" : "receives from",
                                        other, exists ? "is not on the microbatch's route" : "does not exist"));
      }
      if (rank_of(shape, other) == rank) {
        return naming.error(
            rank, i, fmt::format("moves data between virtual stages {} and {}, which share the rank", vs, other));
      }
      if (op.peer != static_cast<std::uint32_t>(rank_of(shape, other))) {
        return naming.error(
            rank, i,
            fmt::format("names peer {}, but virtual stage {} lives on rank {}",
                        op.peer == kNoPeer ? -1 : static_cast<std::int64_t>(op.peer), other, rank_of(shape, other)));
      }
    }
  }
  return std::nullopt;
}

}  // namespace mpsim::schedule::detail
