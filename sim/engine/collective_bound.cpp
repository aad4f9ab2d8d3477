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

/// What can leave a device, and a node, per nanosecond: the bandwidth of every link at a device, and
/// of every link between a node and anything outside it. All of a phase's flows from one source, or
/// from one node to others, leave through these links, whatever their routes.
struct Egress {
  std::vector<double> device;  ///< bytes per ns, by device id
  std::vector<double> node;    ///< bytes per ns, by node index
};

Egress egress_of(const topology::Cluster& cluster) {
  Egress out;
  out.device.assign(cluster.devices().size(), 0.0);
  out.node.assign(static_cast<std::size_t>(std::max(cluster.node_count, 0)), 0.0);
  for (const topology::Link& l : cluster.links()) {
    if (l.down) continue;
    const double bw = l.bandwidth.in_bytes_per_sec() * 1e-9;
    out.device[l.a.value] += bw;
    out.device[l.b.value] += bw;
    const int na = cluster.device(l.a).node;
    const int nb = cluster.device(l.b).node;
    if (na == nb) continue;
    if (na >= 0 && static_cast<std::size_t>(na) < out.node.size()) out.node[static_cast<std::size_t>(na)] += bw;
    if (nb >= 0 && static_cast<std::size_t>(nb) < out.node.size()) out.node[static_cast<std::size_t>(nb)] += bw;
  }
  return out;
}

/// Nanoseconds per byte of a phase's share that its busiest source, or its busiest node's links out,
/// need: the bytes they send at once over what can leave them.
double shared_egress_ns_per_byte(const topology::Cluster& cluster, const Egress& egress, const CollectiveRound& phase,
                                 double share) {
  std::vector<double> sent(egress.device.size(), 0.0);
  std::vector<double> left(egress.node.size(), 0.0);
  for (const auto& [a, b] : phase.transfers) {
    if (a == b) continue;
    sent[a.value] += share;
    const int na = cluster.device(a).node;
    if (na >= 0 && na != cluster.device(b).node && static_cast<std::size_t>(na) < left.size()) {
      left[static_cast<std::size_t>(na)] += share;
    }
  }
  double worst = 0;
  for (std::size_t d = 0; d < sent.size(); ++d) {
    if (sent[d] > 0 && egress.device[d] > 0) worst = std::max(worst, sent[d] / egress.device[d]);
  }
  for (std::size_t n = 0; n < left.size(); ++n) {
    if (left[n] > 0 && egress.node[n] > 0) worst = std::max(worst, left[n] / egress.node[n]);
  }
  return worst;
}

}  // namespace

CollectiveBound collective_bound(const topology::Cluster& cluster, SharedRoutes& routes, CollectiveKind kind,
                                 CollectiveAlgorithm algorithm, const std::vector<std::vector<topology::DeviceId>>& groups,
                                 const TokenRouting* routing) {
  if (algorithm == CollectiveAlgorithm::Auto) {
    // The simulator takes one of the candidates: below each of them, the smaller latency and slope.
    std::optional<CollectiveBound> low;
    for (const CollectiveAlgorithm a : auto_candidates(cluster, kind, groups)) {
      const CollectiveBound b = collective_bound(cluster, routes, kind, a, groups, routing);
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
  const auto phases = collective_rounds(cluster, kind, algorithm, groups, Bytes::bytes(kReferenceBytes), routing);
  const Egress egress = egress_of(cluster);
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
    // Each round as slow as its slowest route, or as its transfers' shared ways out (an all-to-all's
    // EP - 1 sends from every member, or its members' sends leaving a node through its NICs).
    out.ns_per_byte += phase.rounds * std::max(per_round_share / bandwidth,
                                               shared_egress_ns_per_byte(cluster, egress, phase, per_round_share));
  }
  return out;
}

TimeNs CollectiveBound::at(Bytes size) const noexcept {
  if (size.count() <= 0) return TimeNs{};
  // Rounded down, so that the bound stays below the simulator's rounded-up times.
  return latency + TimeNs::ns(static_cast<std::int64_t>(std::floor(static_cast<double>(size.count()) * ns_per_byte)));
}

}  // namespace mpsim::engine
