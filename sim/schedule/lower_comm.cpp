#include "sim/schedule/ops.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule {

Program lower_comm(Program program) {
  const PipelineShape& shape = program.shape;
  const int last = virtual_stage_count(shape) - 1;
  for (std::size_t r = 0; r < program.streams.size(); ++r) {
    const int rank = static_cast<int>(r);
    std::vector<Op> lowered;
    lowered.reserve(program.streams[r].size() * 2);
    for (const Op& op : program.streams[r]) {
      const int mb = static_cast<int>(op.microbatch);
      const int chunk = op.chunk;
      const int vs = virtual_stage(shape, rank, chunk);
      // Neighbouring virtual stages share a rank when p = 1 and at the turn of a V; then the stream's
      // own order carries the data.
      const bool has_prev = vs > 0 && rank_of(shape, vs - 1) != rank;
      const bool has_next = vs < last && rank_of(shape, vs + 1) != rank;
      switch (op.kind) {
        case OpKind::Forward:
          if (has_prev) lowered.push_back(comm_op(OpKind::RecvActivation, mb, chunk, rank_of(shape, vs - 1)));
          lowered.push_back(op);
          if (has_next) lowered.push_back(comm_op(OpKind::SendActivation, mb, chunk, rank_of(shape, vs + 1)));
          break;
        case OpKind::Backward:
        case OpKind::BackwardInput:
          if (has_next) lowered.push_back(comm_op(OpKind::RecvGrad, mb, chunk, rank_of(shape, vs + 1)));
          lowered.push_back(op);
          if (has_prev) lowered.push_back(comm_op(OpKind::SendGrad, mb, chunk, rank_of(shape, vs - 1)));
          break;
        case OpKind::SendActivation:
        case OpKind::RecvActivation:
        case OpKind::SendGrad:
        case OpKind::RecvGrad: break;  // re-derived from the compute ops
        case OpKind::BackwardWeight:
        case OpKind::AllReduce:
        case OpKind::ReduceScatter:
        case OpKind::AllGather:
        case OpKind::AllToAll:
        case OpKind::OptimizerStep: lowered.push_back(op); break;
      }
    }
    program.streams[r] = std::move(lowered);
  }
  return program;
}

}  // namespace mpsim::schedule
