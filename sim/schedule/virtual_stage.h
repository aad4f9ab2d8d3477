#pragma once
/// Where virtual stages live (Megatron's placement, program.h): chunk `c` of pipeline rank `r` is
/// virtual stage `c * stages + r`, so rank `r` holds virtual stages r, r + p, r + 2p, ...
#include "sim/schedule/program.h"

namespace mpsim::schedule {

/// p * v: the number of virtual stages a microbatch runs through.
[[nodiscard]] constexpr int virtual_stage_count(const PipelineShape& shape) noexcept {
  return shape.stages * shape.chunks;
}
/// The virtual stage that chunk `chunk` of rank `rank` holds.
[[nodiscard]] constexpr int virtual_stage(const PipelineShape& shape, int rank, int chunk) noexcept {
  return chunk * shape.stages + rank;
}
/// The pipeline rank holding virtual stage `vs` (0 <= vs < virtual_stage_count).
[[nodiscard]] constexpr int rank_of(const PipelineShape& shape, int vs) noexcept { return vs % shape.stages; }
/// The chunk, on its rank, that virtual stage `vs` is.
[[nodiscard]] constexpr int chunk_of(const PipelineShape& shape, int vs) noexcept { return vs / shape.stages; }

}  // namespace mpsim::schedule
