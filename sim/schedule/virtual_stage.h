#pragma once
/// Where virtual stages live: Megatron's loop (chunk `c` of pipeline rank `r` is virtual stage
/// `c * stages + r`, so rank `r` holds virtual stages r, r + p, r + 2p, ...) or, for the V-shaped
/// schedules, the V (chunk 1 of rank `r` is virtual stage 2p - 1 - r); plan::virtual_stage_of.
#include "sim/schedule/program.h"

namespace mpsim::schedule {

/// p * v: the number of virtual stages a microbatch runs through.
[[nodiscard]] constexpr int virtual_stage_count(const PipelineShape& shape) noexcept {
  return shape.stages * shape.chunks;
}
/// The virtual stage that chunk `chunk` of rank `rank` holds.
[[nodiscard]] constexpr int virtual_stage(const PipelineShape& shape, int rank, int chunk) noexcept {
  return plan::virtual_stage_of(shape.kind, shape.stages, rank, chunk);
}
/// The chunk, on its rank, that virtual stage `vs` is (0 <= vs < virtual_stage_count).
[[nodiscard]] constexpr int chunk_of(const PipelineShape& shape, int vs) noexcept { return vs / shape.stages; }
/// The pipeline rank holding virtual stage `vs`.
[[nodiscard]] constexpr int rank_of(const PipelineShape& shape, int vs) noexcept {
  const int within = vs % shape.stages;
  return plan::is_v_shaped(shape.kind) && chunk_of(shape, vs) == 1 ? shape.stages - 1 - within : within;
}

}  // namespace mpsim::schedule
