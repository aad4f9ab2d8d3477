#pragma once
/// Routes shared by the simulations of one cluster (the planner runs hundreds on the same cluster).
/// A route is a function of the cluster and its two ends only (RouteFinder caches nothing that
/// changes its answer), so sharing them changes no result. Thread-safe.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

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

 private:
  const topology::Cluster* cluster_;
  std::mutex mutex_;
  topology::RouteFinder finder_;
  std::unordered_map<std::uint64_t, std::unique_ptr<const std::optional<topology::Route>>> routes_;
};

}  // namespace mpsim::engine
