#include "sim/schedule/ops.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule {

Program lower_comm(Program program) {
  const PipelineShape& shape = program.shape;
  for (std::size_t r = 0; r < program.streams.size(); ++r) {
    const int rank = static_cast<int>(r);
    std::vector<Op> lowered;
    lowered.reserve(program.streams[r].size() * 2);
    // What a pass receives before it runs and sends after it.
    const auto receives = [&](const Op& pass) {
      const int mb = static_cast<int>(pass.microbatch);
      const int vs = virtual_stage(shape, rank, pass.chunk);
      const Route route = route_of(shape, mb);
      // Neighbouring virtual stages share a rank when p = 1 and at the turn of a V; then the stream's
      // own order carries the data.
      if (pass.kind == OpKind::Forward && route.has_before(vs) && rank_of(shape, vs - 1) != rank) {
        lowered.push_back(comm_op(OpKind::RecvActivation, mb, pass.chunk, rank_of(shape, vs - 1)));
      }
      if ((pass.kind == OpKind::Backward || pass.kind == OpKind::BackwardInput) && route.has_after(vs) &&
          rank_of(shape, vs + 1) != rank) {
        lowered.push_back(comm_op(OpKind::RecvGrad, mb, pass.chunk, rank_of(shape, vs + 1)));
      }
    };
    const auto sends = [&](const Op& pass) {
      const int mb = static_cast<int>(pass.microbatch);
      const int vs = virtual_stage(shape, rank, pass.chunk);
      const Route route = route_of(shape, mb);
      if (pass.kind == OpKind::Forward && route.has_after(vs) && rank_of(shape, vs + 1) != rank) {
        lowered.push_back(comm_op(OpKind::SendActivation, mb, pass.chunk, rank_of(shape, vs + 1)));
      }
      if ((pass.kind == OpKind::Backward || pass.kind == OpKind::BackwardInput) && route.has_before(vs) &&
          rank_of(shape, vs - 1) != rank) {
        lowered.push_back(comm_op(OpKind::SendGrad, mb, pass.chunk, rank_of(shape, vs - 1)));
      }
    };
    for (const Op& op : program.streams[r]) {
      if (is_send(op.kind) || is_recv(op.kind)) continue;  // re-derived from the compute ops
      const ComputeParts parts = compute_parts(op);
      for (const Op& pass : parts) receives(pass);
      lowered.push_back(op);
      for (const Op& pass : parts) sends(pass);
    }
    program.streams[r] = std::move(lowered);
  }
  return program;
}

}  // namespace mpsim::schedule
