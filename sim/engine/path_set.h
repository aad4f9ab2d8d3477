#pragma once
/// What a set of concurrent transfers loads on the network: the link directions their routes cross
/// (with how many of the transfers cross each), the largest latency of those routes, and the most a
/// collective's transfer over them may reach. A function of the cluster and the transfers alone, so
/// the simulations of one cluster share them (SharedRoutes::path_set).
#include <array>
#include <functional>
#include <utility>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/network_model.h"
#include "sim/topology/cluster.h"
#include "sim/topology/route_table.h"

namespace mpsim::engine {

/// Transfers (source, destination) that run at once; a transfer from a device to itself moves nothing.
using TransferPairs = std::vector<std::pair<topology::DeviceId, topology::DeviceId>>;

struct PathSet {
  std::vector<Usage> usage;  ///< merged (merge_usage)
  TimeNs latency;            ///< the largest of the routes'
  /// Bytes per second a collective's transfer reaches at most: the least over the transfers of
  /// collective_efficiency(route class, nvls) x route bandwidth; [0] without NVLS, [1] with it.
  /// Infinite when no transfer leaves its device.
  std::array<double, 2> collective_cap{};
};

/// The path set of `pairs`, each route given by `route_of` (which throws when there is none).
[[nodiscard]] PathSet make_path_set(
    const topology::Cluster& cluster, const TransferPairs& pairs,
    const std::function<const topology::Route&(topology::DeviceId, topology::DeviceId)>& route_of);

}  // namespace mpsim::engine
