#include "sim/engine/path_set.h"

#include <algorithm>
#include <limits>

#include "sim/engine/collective_tuning.h"

namespace mpsim::engine {

PathSet make_path_set(const topology::Cluster& cluster, const TransferPairs& pairs,
                      const std::function<const topology::Route&(topology::DeviceId, topology::DeviceId)>& route_of) {
  PathSet set;
  set.collective_cap = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (const auto& [a, b] : pairs) {
    if (a == b) continue;
    const topology::Route& r = route_of(a, b);
    set.latency = std::max(set.latency, r.latency);
    add_route_usage(cluster, r, set.usage);
    for (const bool nvls : {false, true}) {
      double& cap = set.collective_cap[nvls ? 1 : 0];
      cap = std::min(cap, collective_efficiency(r.path_class, nvls) * r.bandwidth.in_bytes_per_sec());
    }
  }
  merge_usage(set.usage);
  return set;
}

}  // namespace mpsim::engine
