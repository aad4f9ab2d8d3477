#pragma once
/// Routes shared by the simulations of one cluster (the planner runs hundreds on the same cluster).
/// A route is a function of the cluster and its two ends only (RouteFinder caches nothing that
/// changes its answer), and a path set one of the cluster and its transfers, so sharing them changes
/// no result. Thread-safe.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "sim/engine/path_set.h"
#include "sim/topology/cluster.h"
#include "sim/topology/route_table.h"

namespace mpsim::engine {

class SharedRoutes {
 public:
  explicit SharedRoutes(const topology::Cluster& cluster);
  SharedRoutes(const SharedRoutes&) = delete;
  SharedRoutes& operator=(const SharedRoutes&) = delete;
  [[nodiscard]] const topology::Cluster& cluster() const noexcept { return *cluster_; }
  /// The route src -> dst, or null when there is none; valid as long as this object.
  [[nodiscard]] const topology::Route* route(topology::DeviceId src, topology::DeviceId dst);
  /// The path set of `pairs` (make_path_set over these routes); valid as long as this object. Throws
  /// std::logic_error when a pair has no route.
  [[nodiscard]] const PathSet& path_set(const TransferPairs& pairs);

 private:
  const topology::Cluster* cluster_;
  std::mutex mutex_;
  topology::RouteFinder finder_;
  std::unordered_map<std::uint64_t, std::unique_ptr<const std::optional<topology::Route>>> routes_;
  std::map<TransferPairs, std::unique_ptr<const PathSet>> path_sets_;
};

}  // namespace mpsim::engine
