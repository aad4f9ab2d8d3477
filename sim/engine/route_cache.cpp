#include "sim/engine/route_cache.h"

#include <stdexcept>

#include <fmt/format.h>

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

const PathSet& SharedRoutes::path_set(const TransferPairs& pairs) {
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = path_sets_.find(pairs); it != path_sets_.end()) return *it->second;
  }
  // Built outside the lock (route() takes it per route); a set built twice by two threads is the same.
  auto built = std::make_unique<const PathSet>(
      make_path_set(*cluster_, pairs, [this](topology::DeviceId a, topology::DeviceId b) -> const topology::Route& {
        const topology::Route* r = route(a, b);
        if (r == nullptr) {
          throw std::logic_error(fmt::format("no route {} -> {}", cluster_->device(a).name, cluster_->device(b).name));
        }
        return *r;
      }));
  const std::lock_guard lock(mutex_);
  return *path_sets_.try_emplace(pairs, std::move(built)).first->second;
}

}  // namespace mpsim::engine
