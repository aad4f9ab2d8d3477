#pragma once
/// A lower bound on what a pipeline rank does after its last backward: the data-parallel gradient
/// reduction (without --overlap-grad-reduce its collectives start after the last backward and run
/// one at a time), the optimizer step, and with ZeRO >= 1 the all-gather of the updated parameters.
///
/// Each collective is engine::collective_rounds()' phases; the simulator moves a phase of r rounds as
/// one flow after r x (its routes' largest latency), at a rate no higher than the slowest route's
/// bandwidth. So a phase takes at least r x (latency + bytes per round / bandwidth) of any one of its
/// transfers, and the planner takes the worst of a sample of them. Bytes per round are a share of
/// the collective's size (ceil(size / q)); q is read off one call at a large size, rounded so that
/// the bytes are never overestimated. Bucket boundaries only add latency, so one collective of all
/// the rank's gradient bytes bounds them.
#include <cstdint>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/collectives.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// time(size) >= latency + size x seconds_per_byte, for size > 0.
struct CollectiveBound {
  TimeNs latency;
  double ns_per_byte = 0;
  [[nodiscard]] TimeNs at(Bytes size) const noexcept;
};

/// The data-parallel collectives of every pipeline rank of one layout.
struct LayoutSyncBounds {
  std::vector<CollectiveBound> all_reduce;      ///< by pipeline rank
  std::vector<CollectiveBound> reduce_scatter;  ///< by pipeline rank
  std::vector<CollectiveBound> all_gather;      ///< by pipeline rank
};

/// For the layout of (tensor, pipeline, data, placement) on `cluster`. O(pipeline x (tensor x data +
/// sampled routes)). Thread-safe (its own route finder).
[[nodiscard]] LayoutSyncBounds layout_sync_bounds(const topology::Cluster& cluster, int tensor, int pipeline, int data,
                                                  const plan::Placement& placement,
                                                  engine::CollectiveAlgorithm algorithm);

/// The time after the last backward of each rank: gradient reduction (all-reduce, or reduce-scatter
/// with ZeRO >= 1) of its gradient bytes, the optimizer step (as the cost model prices it: Adam's
/// HBM traffic of its parameters, sharded by ZeRO >= 1), then with ZeRO >= 1 the all-gather.
/// `rank_parameters` on one tensor rank, by pipeline rank. No reduction when data == 1.
[[nodiscard]] std::vector<TimeNs> rank_tails(const LayoutSyncBounds& bounds, const std::vector<std::int64_t>& rank_parameters,
                                             int data, int zero, BytesPerSec memory_bandwidth);

}  // namespace mpsim::planner
