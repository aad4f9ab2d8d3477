#pragma once
/// Routes between devices: the path traffic takes, its bottleneck bandwidth, latency and class.
///
/// Routing follows NCCL's rules: prefer the best path class (NVLink before PCIe before the host
/// bridge, the inter-socket link and the network), then the fewest hops, then the widest
/// bottleneck. GPUs do not forward traffic for other GPUs, and a NIC forwards only between its
/// PCIe side and the network.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/core/units.h"
#include "sim/topology/cluster.h"

namespace mpsim::topology {

/// NCCL's path types, best first.
enum class PathClass : std::uint8_t { Local, NVL, PIX, PXB, PHB, SYS, NET };
[[nodiscard]] std::string_view to_string(PathClass c) noexcept;

struct Route {
  DeviceId src;
  DeviceId dst;
  std::vector<DeviceId> hops;   ///< src ... dst
  std::vector<LinkId> links;    ///< hops.size() - 1 links
  BytesPerSec bandwidth;        ///< bottleneck, one direction
  TimeNs latency;               ///< sum of link latencies
  PathClass path_class = PathClass::Local;
};

/// Finds routes, caching the searches it can reuse (node-local searches per device, shortest paths
/// between fabric switches). Inside a node a route is a small search; across the network it joins
/// the best path to one of the source's NICs, the fabric path between the two NICs' switches and the
/// path from a NIC to the destination. Not thread-safe: one per thread.
class RouteFinder {
 public:
  explicit RouteFinder(const Cluster& cluster);
  ~RouteFinder();
  RouteFinder(const RouteFinder&) = delete;
  RouteFinder& operator=(const RouteFinder&) = delete;
  [[nodiscard]] std::optional<Route> route(DeviceId src, DeviceId dst);

 private:
  struct Caches;
  const Cluster* cluster_;
  std::unique_ptr<Caches> caches_;
};

/// Routes from one device to every GPU (entries of other devices are empty).
[[nodiscard]] std::vector<std::optional<Route>> routes_from(const Cluster& cluster, DeviceId src);
/// The first GPU that cannot reach the cluster's first GPU under the routing rules, if any: a cluster
/// every GPU of which can talk to every other has none.
[[nodiscard]] std::optional<DeviceId> first_unreachable_gpu(const Cluster& cluster);
/// One route, or nothing when dst is unreachable.
[[nodiscard]] std::optional<Route> find_route(const Cluster& cluster, DeviceId src, DeviceId dst);

/// Routes between GPUs, computed once for a set of source GPUs and immutable afterwards, so that
/// threads share it without locks. Sources not precomputed are answered by find_route().
class RouteTable {
 public:
  /// Precomputes routes from `sources` (every GPU when empty and the cluster has at most
  /// kPrecomputeAllLimit GPUs) to every GPU.
  explicit RouteTable(const Cluster& cluster, const std::vector<DeviceId>& sources = {});
  static constexpr std::size_t kPrecomputeAllLimit = 256;

  [[nodiscard]] std::optional<Route> route(DeviceId src, DeviceId dst) const;
  [[nodiscard]] const Cluster& cluster() const noexcept { return *cluster_; }

 private:
  const Cluster* cluster_;
  std::unordered_map<std::uint32_t, std::vector<std::optional<Route>>> from_;  // by source device
};

}  // namespace mpsim::topology
