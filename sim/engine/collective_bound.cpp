#include "sim/engine/collective_bound.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace mpsim::engine {
namespace {

/// A size at which ceil(size / q) pins q down to about one part in 10^12.
constexpr std::int64_t kReferenceBytes = std::int64_t{1} << 40;
/// Transfers of a phase whose routes are looked up: any subset gives a valid bound.
constexpr std::size_t kSampledTransfers = 64;

}  // namespace

CollectiveBound collective_bound(const topology::Cluster& cluster, topology::RouteFinder& routes, CollectiveKind kind,
                                 CollectiveAlgorithm algorithm, const std::vector<std::vector<topology::DeviceId>>& groups) {
  if (algorithm == CollectiveAlgorithm::Auto) {
    // The simulator takes one of the candidates: below each of them, the smaller latency and slope.
    std::optional<CollectiveBound> low;
    for (const CollectiveAlgorithm a : auto_candidates(cluster, kind, groups)) {
      const CollectiveBound b = collective_bound(cluster, routes, kind, a, groups);
      if (!low) {
        low = b;
        continue;
      }
      low->latency = std::min(low->latency, b.latency);
      low->ns_per_byte = std::min(low->ns_per_byte, b.ns_per_byte);
    }
    return low.value_or(CollectiveBound{});
  }
  CollectiveBound out;
  const auto phases = collective_rounds(cluster, kind, algorithm, groups, Bytes::bytes(kReferenceBytes));
  for (const CollectiveRound& phase : phases) {
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

TimeNs CollectiveBound::at(Bytes size) const noexcept {
  if (size.count() <= 0) return TimeNs{};
  // Rounded down, so that the bound stays below the simulator's rounded-up times.
  return latency + TimeNs::ns(static_cast<std::int64_t>(std::floor(static_cast<double>(size.count()) * ns_per_byte)));
}

}  // namespace mpsim::engine
