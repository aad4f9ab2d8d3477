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

/// The virtual stages microbatch `microbatch` runs through, first to last: all of them, or in a
/// bidirectional schedule (plan::is_bidirectional) stages 0 .. p - 1 for the first half of the
/// microbatches and p .. 2p - 1 for the second.
struct Route {
  int first = 0;
  int last = 0;
  [[nodiscard]] constexpr bool contains(int vs) const noexcept { return vs >= first && vs <= last; }
  /// Whether stage `vs` of the route has one before / after it.
  [[nodiscard]] constexpr bool has_before(int vs) const noexcept { return vs > first; }
  [[nodiscard]] constexpr bool has_after(int vs) const noexcept { return vs < last; }
};
[[nodiscard]] constexpr Route route_of(const PipelineShape& shape, int microbatch) noexcept {
  if (!plan::is_bidirectional(shape.kind)) return {0, virtual_stage_count(shape) - 1};
  const int p = shape.stages;
  return microbatch < shape.microbatches / 2 ? Route{0, p - 1} : Route{p, 2 * p - 1};
}

}  // namespace mpsim::schedule
