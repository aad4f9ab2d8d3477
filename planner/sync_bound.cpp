#include "planner/sync_bound.h"

#include <algorithm>
#include <cmath>

#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/topology/route_table.h"

namespace mpsim::planner {
namespace {

/// A size at which ceil(size / q) pins q down to about one part in 10^12.
constexpr std::int64_t kReferenceBytes = std::int64_t{1} << 40;
/// Transfers of a phase whose routes are looked up: any subset gives a valid bound.
constexpr std::size_t kSampledTransfers = 64;

CollectiveBound bound_of(const topology::Cluster& cluster, topology::RouteFinder& routes, engine::CollectiveKind kind,
                         engine::CollectiveAlgorithm algorithm, const std::vector<std::vector<topology::DeviceId>>& groups) {
  CollectiveBound out;
  const auto phases = engine::collective_rounds(cluster, kind, algorithm, groups, Bytes::bytes(kReferenceBytes));
  for (const engine::CollectiveRound& phase : phases) {
    TimeNs latency;
    double bandwidth = -1;  // bytes per ns, the slowest sampled route
    for (std::size_t i = 0; i < std::min(phase.transfers.size(), kSampledTransfers); ++i) {
      const auto& [a, b] = phase.transfers[i];
      if (a == b) continue;
      const auto route = routes.route(a, b);
      if (!route) continue;
      latency = std::max(latency, route->latency);
      const double bw = route->bandwidth.in_bytes_per_sec() * 1e-9;
      bandwidth = bandwidth < 0 ? bw : std::min(bandwidth, bw);
    }
    if (bandwidth <= 0) continue;
    // bytes per round = ceil(size / q) with q < reference / (bytes0 - 1): size / that q never overestimates.
    const double per_round_share = phase.bytes.count() > 1
                                       ? static_cast<double>(phase.bytes.count() - 1) / static_cast<double>(kReferenceBytes)
                                       : 0.0;
    out.latency += latency * phase.rounds;
    out.ns_per_byte += phase.rounds * per_round_share / bandwidth;
  }
  return out;
}

}  // namespace

TimeNs CollectiveBound::at(Bytes size) const noexcept {
  if (size.count() <= 0) return TimeNs{};
  // Rounded down, so that the bound stays below the simulator's rounded-up times.
  return latency + TimeNs::ns(static_cast<std::int64_t>(std::floor(static_cast<double>(size.count()) * ns_per_byte)));
}

LayoutSyncBounds layout_sync_bounds(const topology::Cluster& cluster, int tensor, int pipeline, int data,
                                    const plan::Placement& placement, engine::CollectiveAlgorithm algorithm) {
  plan::Plan p;
  p.tensor = tensor;
  p.pipeline = pipeline;
  p.data = data;
  p.placement = placement;
  const plan::Layout layout(p);
  topology::RouteFinder routes(cluster);
  LayoutSyncBounds out;
  for (int rank = 0; rank < pipeline; ++rank) {
    std::vector<std::vector<topology::DeviceId>> groups;
    // One data-parallel group per tensor rank of the stage, as the engine runs them.
    for (const int member : layout.group(layout.with(0, plan::Axis::Pipeline, rank), plan::Axis::Tensor)) {
      std::vector<topology::DeviceId> group;
      for (const int g : layout.group(member, plan::Axis::Data)) group.push_back(cluster.gpus().at(static_cast<std::size_t>(g)));
      groups.push_back(std::move(group));
    }
    out.all_reduce.push_back(bound_of(cluster, routes, engine::CollectiveKind::AllReduce, algorithm, groups));
    out.reduce_scatter.push_back(bound_of(cluster, routes, engine::CollectiveKind::ReduceScatter, algorithm, groups));
    out.all_gather.push_back(bound_of(cluster, routes, engine::CollectiveKind::AllGather, algorithm, groups));
  }
  return out;
}

std::vector<TimeNs> rank_tails(const LayoutSyncBounds& bounds, const std::vector<std::int64_t>& rank_parameters, int data,
                               int zero, BytesPerSec memory_bandwidth) {
  std::vector<TimeNs> out;
  for (std::size_t r = 0; r < rank_parameters.size(); ++r) {
    const std::int64_t parameters = rank_parameters[r];
    const Bytes gradients = Bytes::bytes(parameters * engine::kGradientBytesPerParameter);
    TimeNs tail = engine::optimizer_step_time(parameters, zero, data, memory_bandwidth);
    if (data > 1) {
      tail += zero >= 1 ? bounds.reduce_scatter[r].at(gradients) + bounds.all_gather[r].at(gradients)
                        : bounds.all_reduce[r].at(gradients);
    }
    out.push_back(tail);
  }
  return out;
}

}  // namespace mpsim::planner
