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
#include "sim/engine/cost_model.h"
#include "sim/plan/plan.h"
#include "sim/schedule/program.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// The gradient-sync collectives of every pipeline rank of one layout.
struct LayoutSyncBounds {
  /// [collective kind][pipeline rank], kinds indexed by engine::CollectiveKind.
  std::array<std::vector<engine::CollectiveBound>, 3> by_kind;
  /// The same over the routed experts' replicas (the expert-data group), by pipeline rank; empty
  /// without experts of their own.
  std::array<std::vector<engine::CollectiveBound>, 3> expert_by_kind;
  [[nodiscard]] const engine::CollectiveBound& of(schedule::OpKind kind, std::size_t rank) const;
  [[nodiscard]] const engine::CollectiveBound* of_experts(schedule::OpKind kind, std::size_t rank) const;
};

/// For `layout` on `cluster`: over the dense gradients' replicas (data, and context when > 1:
/// schedule::dense_replica_group) and, with experts of their own, over the expert-data group.
/// O(pipeline x (tensor x data + sampled routes)). Thread-safe (`routes`, the cluster's, has its own lock).
/// The layout of a candidate's data-parallel collectives.
struct SyncLayout {
  plan::Degrees degrees;
  plan::Placement placement = plan::kMegatronPlacement;
  friend auto operator<=>(const SyncLayout&, const SyncLayout&) = default;
};
[[nodiscard]] LayoutSyncBounds layout_sync_bounds(const topology::Cluster& cluster, engine::SharedRoutes& routes,
                                                  const SyncLayout& layout, engine::CollectiveAlgorithm algorithm);

/// How a candidate synchronizes its gradients, for rank_tails.
struct SyncShape {
  int data = 1;       ///< the optimizer's shards (ZeRO >= 1)
  int replicas = 1;   ///< of the dense weights: data x context
  int zero = 0;
  int gradient_bytes_per_parameter = 4;
  int parameter_bytes = 2;  ///< gathered after the step (ZeRO 1-2)
  bool overlap_grad_reduce = false;   ///< a chunk's buckets leave after its last backward
  bool overlap_param_gather = false;  ///< the gather runs at the start of the step instead of after it
  plan::Optimizer optimizer = plan::Optimizer::Adam;
  int expert_data = 1;  ///< the routed experts' optimizer shards (ZeRO >= 1)
};

/// The time after the last backward of each rank: the sync collectives and the optimizer step, in
/// the sync's order (schedule::add_gradient_sync). The reduction of its dense gradients over the
/// replicas (all of them; with overlap only those of its last chunk, chunk 0, whose buckets wait for
/// that backward), the optimizer step (as the cost model prices it, engine::optimizer_step_time: its
/// parameters, sharded over the replicas by ZeRO >= 1, at the model's measured time per parameter or
/// by the optimizer's HBM traffic), and with ZeRO 1-2 the gather of its weights unless
/// it moved to the start of the step. The routed experts' own reduction (expert-data group) is left
/// out, and ZeRO 3 syncs nothing there (its collectives run per layer): both only add.
/// `rank_parameters` on one tensor rank by pipeline rank, `last_chunk_dense` the dense parameters of
/// each rank's chunk 0. No collectives when replicas == 1.
/// The reduction of `dense` parameters' gradients on pipeline rank `rank` (none with one replica or
/// ZeRO 3), and what follows the reductions: the optimizer step and the ZeRO 1-2 gather unless it moved.
[[nodiscard]] TimeNs reduction_time(const LayoutSyncBounds& bounds, const SyncShape& sync, std::size_t rank,
                                    std::int64_t dense);
[[nodiscard]] TimeNs after_reductions_time(const LayoutSyncBounds& bounds, const SyncShape& sync, std::size_t rank,
                                           const engine::RankParameters& parameters, const engine::OptimizerPace& pace);
[[nodiscard]] std::vector<TimeNs> rank_tails(const LayoutSyncBounds& bounds,
                                             const std::vector<engine::RankParameters>& rank_parameters,
                                             const std::vector<std::int64_t>& last_chunk_dense, const SyncShape& sync,
                                             const engine::OptimizerPace& pace);

}  // namespace mpsim::planner
