#include "planner/sync_bound.h"

#include <algorithm>

#include "sim/engine/collectives.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/schedule/passes.h"

namespace mpsim::planner {

const engine::CollectiveBound& LayoutSyncBounds::of(schedule::OpKind kind, std::size_t rank) const {
  return by_kind[static_cast<std::size_t>(engine::collective_kind(kind))].at(rank);
}

const engine::CollectiveBound* LayoutSyncBounds::of_experts(schedule::OpKind kind, std::size_t rank) const {
  const auto& list = expert_by_kind[static_cast<std::size_t>(engine::collective_kind(kind))];
  return rank < list.size() ? &list[rank] : nullptr;
}

LayoutSyncBounds layout_sync_bounds(const topology::Cluster& cluster, engine::SharedRoutes& routes,
                                    const SyncLayout& shape, engine::CollectiveAlgorithm algorithm) {
  plan::Plan p;
  p.degrees = shape.degrees;
  p.placement = shape.placement;
  const plan::Layout layout(p);
  const bool experts = schedule::splits_expert_gradients(p) && p.expert_data() > 1;
  LayoutSyncBounds out;
  for (int rank = 0; rank < shape.degrees[plan::Axis::Pipeline]; ++rank) {
    const std::vector<int> stage = layout.group(layout.with(0, plan::Axis::Pipeline, rank),
                                                plan::Axis::Tensor | plan::Axis::Context | plan::Axis::Data);
    const auto groups = engine::device_groups(cluster, layout, stage, schedule::dense_replica_group(p));
    const auto expert_groups =
        experts ? engine::device_groups(cluster, layout, stage, plan::Axis::ExpertData) : decltype(groups){};
    for (const engine::CollectiveKind kind :
         {engine::CollectiveKind::AllReduce, engine::CollectiveKind::ReduceScatter, engine::CollectiveKind::AllGather}) {
      const auto k = static_cast<std::size_t>(kind);
      out.by_kind[k].push_back(engine::collective_bound(cluster, routes, kind, algorithm, groups));
      if (experts) out.expert_by_kind[k].push_back(engine::collective_bound(cluster, routes, kind, algorithm, expert_groups));
    }
  }
  return out;
}

namespace {
std::int64_t dense_of(const engine::RankParameters& p) { return p.total - std::min(p.expert, p.total); }
bool syncs_after_backward(const SyncShape& s) { return s.replicas > 1 && s.zero < 3; }
}  // namespace

TimeNs reduction_time(const LayoutSyncBounds& bounds, const SyncShape& shape, std::size_t rank, std::int64_t dense) {
  if (!syncs_after_backward(shape)) return TimeNs{};
  const schedule::SyncCollectives sync = schedule::sync_collectives(shape.zero);
  return bounds.of(sync.reduction, rank).at(Bytes::bytes(dense * shape.gradient_bytes_per_parameter));
}

TimeNs after_reductions_time(const LayoutSyncBounds& bounds, const SyncShape& shape, std::size_t rank,
                             const engine::RankParameters& parameters, const engine::OptimizerPace& pace) {
  engine::StateFormat states;
  states.zero = shape.zero;
  states.data = shape.replicas;  // the distributed optimizer shards over data x context
  states.expert_data = shape.expert_data;
  states.optimizer = shape.optimizer;
  TimeNs out = engine::optimizer_step_time(parameters, states, pace);
  const schedule::SyncCollectives sync = schedule::sync_collectives(shape.zero);
  if (syncs_after_backward(shape) && sync.after_step && !shape.overlap_param_gather) {
    out += bounds.of(*sync.after_step, rank).at(Bytes::bytes(dense_of(parameters) * shape.parameter_bytes));
  }
  return out;
}

std::vector<TimeNs> rank_tails(const LayoutSyncBounds& bounds, const std::vector<engine::RankParameters>& rank_parameters,
                               const std::vector<std::int64_t>& last_chunk_dense, const SyncShape& shape,
                               const engine::OptimizerPace& pace) {
  std::vector<TimeNs> out;
  for (std::size_t r = 0; r < rank_parameters.size(); ++r) {
    const std::int64_t reduced = shape.overlap_grad_reduce ? last_chunk_dense.at(r) : dense_of(rank_parameters[r]);
    out.push_back(reduction_time(bounds, shape, r, reduced) +
                  after_reductions_time(bounds, shape, r, rank_parameters[r], pace));
  }
  return out;
}

}  // namespace mpsim::planner
