#pragma once
/// An F&B pair's slots (Megatron-Core's combined 1F1B and the schedules with pairs of their own): per pair of MoE blocks, the
/// backward's combine beside the forward's attention half, the forward's dispatch beside the backward's
/// MLP half, the backward's dispatch beside the forward's MLP half and the forward's combine beside the
/// backward's attention half. Each slot lasts what compute_contention.h's contended_slot_extra adds to
/// its compute; the pair's two sides are summed apart so the planner can bound a pass alone.
#include "sim/engine/compute_contention.h"
#include "sim/engine/cost_model.h"

namespace mpsim::engine {

/// What the forward's two halves of one MoE block of `forward` add beside the partner's all-to-alls,
/// `partner_all_to_all` each, run with `sms` SMs held.
[[nodiscard]] inline TimeNs forward_slots_extra(const ChunkCost& forward, TimeNs partner_all_to_all, int sms,
                                                const topology::GpuKind& gpu) noexcept {
  return contended_slot_extra(forward.moe_attention_forward, partner_all_to_all, sms, gpu) +
         contended_slot_extra(forward.moe_mlp_forward, partner_all_to_all, sms, gpu);
}

/// The same for the backward's two halves of one MoE block of `backward`.
[[nodiscard]] inline TimeNs backward_slots_extra(const ChunkCost& backward, TimeNs partner_all_to_all, int sms,
                                                 const topology::GpuKind& gpu) noexcept {
  return contended_slot_extra(backward.moe_attention_backward, partner_all_to_all, sms, gpu) +
         contended_slot_extra(backward.moe_mlp_backward, partner_all_to_all, sms, gpu);
}

}  // namespace mpsim::engine
