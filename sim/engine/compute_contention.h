#pragma once
/// What overlapped data-parallel communication costs the compute beside it. NCCL runs a collective
/// as one thread block per channel, each holding an SM for as long as the collective runs; a pass
/// that runs beside it gets the SMs left over. Transformer Engine's overlapped tensor-parallel
/// exchanges (--tp-comm-overlap, ring exchange) move data with the copy engines and are not charged.
#include "sim/core/units.h"
#include "sim/topology/gpu_kind.h"

namespace mpsim::engine {

/// SMs a collective's kernels hold: 16 channels, NCCL's NVLS channel count on Hopper
/// (NVLS_NCHANNELS, SM90; shared/reference kernels_and_collectives.yaml, nccl_buffer_constants),
/// about what its ring collectives use on an NVSwitch node.
inline constexpr int kCommunicationSms = 16;

/// A pass of `duration` run beside communication kernels: duration x sms / (sms - 16) (H100, 132
/// SMs: 1.138). Unchanged when the GPU's SM count is unknown or too small to leave any. The engine
/// applies it to a pass that starts while a gradient-stream collective of its GPU is in flight.
[[nodiscard]] inline TimeNs contended_compute(TimeNs duration, const topology::GpuKind& gpu) noexcept {
  if (gpu.sm_count <= kCommunicationSms) return duration;
  const double stretch = static_cast<double>(gpu.sm_count) / (gpu.sm_count - kCommunicationSms);
  return TimeNs::ns(static_cast<std::int64_t>(static_cast<double>(duration.base()) * stretch + 0.5));
}

}  // namespace mpsim::engine
