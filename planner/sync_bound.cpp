#include "planner/sync_bound.h"

#include "sim/engine/collectives.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/schedule/passes.h"
#include "sim/topology/route_table.h"

namespace mpsim::planner {

const engine::CollectiveBound& LayoutSyncBounds::of(schedule::OpKind kind, std::size_t rank) const {
  return by_kind[static_cast<std::size_t>(engine::collective_kind(kind))].at(rank);
}

LayoutSyncBounds layout_sync_bounds(const topology::Cluster& cluster, int tensor, int pipeline, int data,
                                    const plan::Placement& placement, engine::CollectiveAlgorithm algorithm) {
  plan::Plan p;
  p.tensor = tensor;
  p.pipeline = pipeline;
  p.data = data;
  p.placement = placement;
  const plan::Layout layout(p);
  const plan::AxisSet group = schedule::sync_collectives(0).group;
  topology::RouteFinder routes(cluster);
  LayoutSyncBounds out;
  for (int rank = 0; rank < pipeline; ++rank) {
    const std::vector<int> stage = layout.group(layout.with(0, plan::Axis::Pipeline, rank),
                                                plan::Axis::Tensor | plan::Axis::Context | plan::Axis::Data);
    const auto groups = engine::device_groups(cluster, layout, stage, group);
    for (const engine::CollectiveKind kind :
         {engine::CollectiveKind::AllReduce, engine::CollectiveKind::ReduceScatter, engine::CollectiveKind::AllGather}) {
      out.by_kind[static_cast<std::size_t>(kind)].push_back(engine::collective_bound(cluster, routes, kind, algorithm, groups));
    }
  }
  return out;
}

std::vector<TimeNs> rank_tails(const LayoutSyncBounds& bounds, const std::vector<std::int64_t>& rank_parameters, int data,
                               int zero, int gradient_bytes_per_parameter, int parameter_bytes,
                               BytesPerSec memory_bandwidth) {
  const schedule::SyncCollectives sync = schedule::sync_collectives(zero);
  std::vector<TimeNs> out;
  for (std::size_t r = 0; r < rank_parameters.size(); ++r) {
    const std::int64_t parameters = rank_parameters[r];
    const Bytes gradients = Bytes::bytes(parameters * gradient_bytes_per_parameter);
    TimeNs tail = engine::optimizer_step_time(parameters, zero, data, memory_bandwidth);
    if (data > 1) {
      tail += bounds.of(sync.reduction, r).at(gradients);
      if (sync.after_step) tail += bounds.of(*sync.after_step, r).at(Bytes::bytes(parameters * parameter_bytes));
    }
    out.push_back(tail);
  }
  return out;
}

}  // namespace mpsim::planner
