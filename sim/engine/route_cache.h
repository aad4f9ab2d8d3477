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
#include <vector>

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
  using StoredRoute = std::unique_ptr<const std::optional<topology::Route>>;
  /// The routes of `pairs`, keyed as routes_ is: known ones looked up under one lock, the rest found
  /// outside it (routing is most of a new expert layout's set-up, and two search threads would
  /// otherwise take turns at it) and then stored. Pairs from a device to itself only if `self_pairs`.
  [[nodiscard]] std::unordered_map<std::uint64_t, const std::optional<topology::Route>*> routes_of(
      const TransferPairs& pairs, bool self_pairs);
  /// A route finder no other thread is using (RouteFinder keeps caches, so one per thread at a time).
  [[nodiscard]] std::unique_ptr<topology::RouteFinder> take_finder();
  void return_finder(std::unique_ptr<topology::RouteFinder> finder);

  const topology::Cluster* cluster_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<topology::RouteFinder>> idle_finders_;
  std::unordered_map<std::uint64_t, StoredRoute> routes_;
  std::map<TransferPairs, std::unique_ptr<const PathSet>> path_sets_;
};

}  // namespace mpsim::engine
