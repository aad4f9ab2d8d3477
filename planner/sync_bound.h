#pragma once
/// A lower bound on what a pipeline rank does after its last backward: the data-parallel gradient sync
/// as add_gradient_sync() orders it (schedule::sync_collectives: the reduction, the optimizer step,
/// then with ZeRO >= 1 the parameter all-gather; without --overlap-grad-reduce the collectives start
/// after the last backward and run one at a time).
///
/// Each collective is bounded by the engine's own rule (engine::collective_bound) over the groups the
/// engine runs it on (engine::device_groups). Bucket boundaries only add latency, so one collective of
/// all the rank's gradient bytes bounds them.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/collective_bound.h"
#include "sim/plan/plan.h"
#include "sim/schedule/program.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// The gradient-sync collectives of every pipeline rank of one layout.
struct LayoutSyncBounds {
  /// [collective kind][pipeline rank], kinds indexed by engine::CollectiveKind.
  std::array<std::vector<engine::CollectiveBound>, 3> by_kind;
  [[nodiscard]] const engine::CollectiveBound& of(schedule::OpKind kind, std::size_t rank) const;
};

/// For the layout of (tensor, pipeline, data, placement) on `cluster`. O(pipeline x (tensor x data +
/// sampled routes)). Thread-safe (its own route finder).
[[nodiscard]] LayoutSyncBounds layout_sync_bounds(const topology::Cluster& cluster, int tensor, int pipeline, int data,
                                                  const plan::Placement& placement,
                                                  engine::CollectiveAlgorithm algorithm);

/// The time after the last backward of each rank: the sync collectives (the reduction of its gradient
/// at `gradient_bytes_per_parameter`; with ZeRO, the gather of its weights at `parameter_bytes` per
/// parameter) and the
/// optimizer step (as the cost model prices it: Adam's HBM traffic of its parameters, sharded by
/// ZeRO >= 1), in the sync's order. `rank_parameters` on one tensor rank, by pipeline rank. No
/// collectives when data == 1.
[[nodiscard]] std::vector<TimeNs> rank_tails(const LayoutSyncBounds& bounds, const std::vector<std::int64_t>& rank_parameters,
                                             int data, int zero, int gradient_bytes_per_parameter,
                                             int parameter_bytes, BytesPerSec memory_bandwidth);

}  // namespace mpsim::planner
