#pragma once
/// What overlapped communication costs the compute beside it: data-parallel collectives beside a pass,
/// and the expert all-to-alls beside an F&B pair's slots. NCCL runs a collective as one thread block
/// per channel, each holding an SM for as long as the collective runs (DeepEP's and HybridEP's kernels
/// likewise hold their configured SMs); the compute beside it gets the SMs left over. Transformer Engine's overlapped tensor-parallel
/// exchanges (--tp-comm-overlap, ring exchange) move data with the copy engines and are not charged.
#include <algorithm>
#include <optional>

#include "sim/core/units.h"
#include "sim/plan/plan.h"
#include "sim/topology/gpu_kind.h"

namespace mpsim::engine {

/// SMs a collective's kernels hold: 16 channels, NCCL's NVLS channel count on Hopper (NVLS_NCHANNELS
/// for SM90 in NCCL's source), about what its ring collectives use on an NVSwitch node.
inline constexpr int kCommunicationSms = 16;

/// A pass of `duration` run beside communication kernels: duration x sms / (sms - 16) (H100, 132
/// SMs: 1.138). Unchanged when the GPU's SM count is unknown or too small to leave any. The engine
/// applies it to a pass that starts while a gradient-stream collective of its GPU is in flight.
[[nodiscard]] inline TimeNs contended_compute(TimeNs duration, const topology::GpuKind& gpu) noexcept {
  if (gpu.sm_count <= kCommunicationSms) return duration;
  const double stretch = static_cast<double>(gpu.sm_count) / (gpu.sm_count - kCommunicationSms);
  return TimeNs::ns(static_cast<std::int64_t>(static_cast<double>(duration.base()) * stretch + 0.5));
}

/// SMs an expert all-to-all's kernels hold while they run: NCCL's (kCommunicationSms), or a flex
/// backend's `configured` count (the plan's moe_deepep_num_sms / moe_hybridep_num_sms), by default
/// Megatron-Core's, 20 and 16 (megatron/core/transformer/transformer_config.py).
[[nodiscard]] constexpr int dispatcher_sms(plan::MoeDispatcher d, std::optional<int> configured = std::nullopt) noexcept {
  if (configured && d != plan::MoeDispatcher::AllToAll) return *configured;
  switch (d) {
    case plan::MoeDispatcher::DeepEp: return 20;
    case plan::MoeDispatcher::HybridEp: return 16;
    case plan::MoeDispatcher::AllToAll: break;
  }
  return kCommunicationSms;
}

/// What a slot of `work` compute beside `comm` of communication holding `sms` SMs adds to `work`: the
/// compute runs on the SMs left over while the communication runs, so the slot lasts
/// max(comm, work + comm x sms / total SMs).
[[nodiscard]] inline TimeNs contended_slot_extra(TimeNs work, TimeNs comm, int sms, const topology::GpuKind& gpu) noexcept {
  const TimeNs exposed = comm > work ? comm - work : TimeNs{};
  if (gpu.sm_count <= sms) return exposed;
  const auto slowed = TimeNs::ns(static_cast<std::int64_t>(static_cast<double>(comm.base()) * sms / gpu.sm_count + 0.5));
  return std::max(exposed, slowed);
}

}  // namespace mpsim::engine
