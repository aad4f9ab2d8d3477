#include "sim/engine/route_cache.h"

#include <stdexcept>

#include <fmt/format.h>

namespace mpsim::engine {
namespace {

std::uint64_t route_key(topology::DeviceId src, topology::DeviceId dst) {
  return (static_cast<std::uint64_t>(src.value) << 32) | dst.value;
}

}  // namespace

SharedRoutes::SharedRoutes(const topology::Cluster& cluster) : cluster_(&cluster) {}

std::unique_ptr<topology::RouteFinder> SharedRoutes::take_finder() {
  {
    const std::lock_guard lock(mutex_);
    if (!idle_finders_.empty()) {
      auto finder = std::move(idle_finders_.back());
      idle_finders_.pop_back();
      return finder;
    }
  }
  return std::make_unique<topology::RouteFinder>(*cluster_);
}

void SharedRoutes::return_finder(std::unique_ptr<topology::RouteFinder> finder) {
  const std::lock_guard lock(mutex_);
  idle_finders_.push_back(std::move(finder));
}

const topology::Route* SharedRoutes::route(topology::DeviceId src, topology::DeviceId dst) {
  const std::optional<topology::Route>* stored = nullptr;
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = routes_.find(route_key(src, dst)); it != routes_.end()) stored = it->second.get();
  }
  if (stored == nullptr) stored = routes_of({{src, dst}}, true).at(route_key(src, dst));  // found outside the lock
  return stored->has_value() ? &**stored : nullptr;
}

std::unordered_map<std::uint64_t, const std::optional<topology::Route>*> SharedRoutes::routes_of(
    const TransferPairs& pairs, bool self_pairs) {
  std::unordered_map<std::uint64_t, const std::optional<topology::Route>*> found;
  std::vector<std::pair<topology::DeviceId, topology::DeviceId>> missing;
  {
    const std::lock_guard lock(mutex_);
    for (const auto& [a, b] : pairs) {
      const std::uint64_t key = route_key(a, b);
      if ((a == b && !self_pairs) || found.contains(key)) continue;
      const auto it = routes_.find(key);
      if (it != routes_.end()) {
        found.emplace(key, it->second.get());
      } else {
        found.emplace(key, nullptr);
        missing.emplace_back(a, b);
      }
    }
  }
  if (missing.empty()) return found;
  // A route is a function of the cluster and its ends, so one found twice by two threads is the same.
  std::vector<StoredRoute> computed;
  computed.reserve(missing.size());
  std::unique_ptr<topology::RouteFinder> finder = take_finder();
  for (const auto& [a, b] : missing) computed.push_back(std::make_unique<const std::optional<topology::Route>>(finder->route(a, b)));
  return_finder(std::move(finder));
  const std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const std::uint64_t key = route_key(missing[i].first, missing[i].second);
    found[key] = routes_.try_emplace(key, std::move(computed[i])).first->second.get();
  }
  return found;
}

const PathSet& SharedRoutes::path_set(const TransferPairs& pairs) {
  {
    const std::lock_guard lock(mutex_);
    if (const auto it = path_sets_.find(pairs); it != path_sets_.end()) return *it->second;
  }
  // Built outside the lock; a set built twice by two threads is the same.
  const auto routes = routes_of(pairs, false);  // a transfer to itself moves nothing
  auto built = std::make_unique<const PathSet>(
      make_path_set(*cluster_, pairs, [&](topology::DeviceId a, topology::DeviceId b) -> const topology::Route& {
        const std::optional<topology::Route>& r = *routes.at(route_key(a, b));
        if (!r.has_value()) {
          throw std::logic_error(fmt::format("no route {} -> {}", cluster_->device(a).name, cluster_->device(b).name));
        }
        return *r;
      }));
  const std::lock_guard lock(mutex_);
  return *path_sets_.try_emplace(pairs, std::move(built)).first->second;
}

}  // namespace mpsim::engine
