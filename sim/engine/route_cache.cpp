#include "sim/engine/route_cache.h"

namespace mpsim::engine {

SharedRoutes::SharedRoutes(const topology::Cluster& cluster) : cluster_(&cluster), finder_(cluster) {}

const topology::Route* SharedRoutes::route(topology::DeviceId src, topology::DeviceId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src.value) << 32) | dst.value;
  const std::lock_guard lock(mutex_);
  auto it = routes_.find(key);
  if (it == routes_.end()) {
    it = routes_.emplace(key, std::make_unique<const std::optional<topology::Route>>(finder_.route(src, dst))).first;
  }
  return it->second->has_value() ? &**it->second : nullptr;
}

}  // namespace mpsim::engine
