#pragma once
/// The activation-memory rule both the simulator and the planner's memory bound follow.
#include <utility>

#include "sim/schedule/program.h"

namespace mpsim::schedule {

/// How a compute pass changes what its chunk holds between passes, counted in one microbatch's
/// stashes: `full` stashes (held from the start of F until the backward starts: B, or I in a split
/// backward) and `after_input` ones (what a split backward keeps from I until W). What a pass holds
/// beyond them while it runs is working_bytes'.
struct StashChange {
  int full = 0;
  int after_input = 0;
};

[[nodiscard]] constexpr StashChange stash_change(OpKind k) noexcept {
  switch (k) {
    case OpKind::Forward: return {+1, 0};
    case OpKind::Backward: return {-1, 0};
    case OpKind::BackwardInput: return {-1, +1};
    case OpKind::BackwardWeight: return {0, -1};
    case OpKind::ForwardBackward:  // its parts change the stash one after the other (compute_parts)
    case OpKind::SendActivation:
    case OpKind::RecvActivation:
    case OpKind::SendGrad:
    case OpKind::RecvGrad:
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::AllGather:
    case OpKind::AllToAll:
    case OpKind::OptimizerStep: break;
  }
  return {};
}

/// Bytes a pass holds while it runs beyond what its chunk's stashes count once its StashChange is made,
/// given the chunk's working memory per microbatch (engine::ChunkCost): a forward its `forward_working`;
/// a backward `backward_working`, which counts the microbatch's stash the change already freed; a split
/// backward's I the same less what it keeps for W (still counted); a W nothing beyond what it frees.
[[nodiscard]] constexpr std::int64_t working_bytes(OpKind k, std::int64_t forward_working,
                                                   std::int64_t backward_working, std::int64_t after_input) noexcept {
  switch (k) {
    case OpKind::Forward: return forward_working;
    case OpKind::Backward: return backward_working;
    case OpKind::BackwardInput: return backward_working > after_input ? backward_working - after_input : 0;
    case OpKind::BackwardWeight:  // frees what I kept; holds nothing beyond it
    case OpKind::ForwardBackward:  // its parts hold theirs one after the other (memory_order)
    case OpKind::SendActivation:
    case OpKind::RecvActivation:
    case OpKind::SendGrad:
    case OpKind::RecvGrad:
    case OpKind::AllReduce:
    case OpKind::ReduceScatter:
    case OpKind::AllGather:
    case OpKind::AllToAll:
    case OpKind::OptimizerStep: break;
  }
  return 0;
}

/// The passes of a compute op in the order they change its chunks' stashes. A schedule whose own F&B
/// pairs keep the forward's stash first (plan::ScheduleTraits::forward_backward_pairs) holds it before
/// the backward frees the other one. Megatron-Core's combined 1F1B (every other schedule with pairs)
/// interleaves the two passes layer by layer, so the backward's activations are freed as the forward's
/// are stashed: the pair frees first and holds what it held before, within one layer's activations.
[[nodiscard]] constexpr ComputeParts memory_order(const Op& op, plan::ScheduleKind kind) noexcept {
  ComputeParts parts = compute_parts(op);
  if (op.kind == OpKind::ForwardBackward && !plan::traits(kind).forward_backward_pairs) {
    std::swap(parts.ops[0], parts.ops[1]);
  }
  return parts;
}

}  // namespace mpsim::schedule
