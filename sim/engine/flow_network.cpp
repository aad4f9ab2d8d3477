#include "sim/engine/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mpsim::engine {

void add_route_usage(const topology::Cluster& cluster, const topology::Route& route, std::vector<Usage>& usage) {
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const topology::Link& link = cluster.link(route.links[i]);
    const bool forward = link.a == route.hops[i];
    const ResourceId r = route.links[i].value * 2 + (link.duplex == topology::Duplex::Half || forward ? 0u : 1u);
    auto it = std::find_if(usage.begin(), usage.end(), [r](const Usage& u) { return u.resource == r; });
    if (it == usage.end()) {
      usage.push_back({r, 1});
    } else {
      ++it->count;
    }
  }
}

FlowNetwork::FlowNetwork(const topology::Cluster& cluster) : cluster_(&cluster) {
  const std::size_t links = cluster.links().size();
  capacity_.resize(links * 2);
  for (std::size_t l = 0; l < links; ++l) {
    const double bytes_per_ns = cluster.links()[l].bandwidth.in_bytes_per_sec() * 1e-9;
    capacity_[2 * l] = bytes_per_ns;
    capacity_[2 * l + 1] = bytes_per_ns;
  }
  on_resource_.resize(links * 2);
  resource_mark_.resize(links * 2, 0);
  link_bytes_.resize(links, 0.0);
  link_busy_ns_.resize(links, 0);
  link_active_.resize(links, 0);
  link_busy_since_.resize(links, 0);
}

void FlowNetwork::progress(FlowId f, std::int64_t now) {
  Flow& flow = flows_[f];
  flow.remaining -= flow.rate * static_cast<double>(now - flow.updated);
  flow.updated = now;
}

void FlowNetwork::link_activity(ResourceId r, int delta, std::int64_t now) {
  const std::size_t link = r / 2;
  if (delta > 0 && link_active_[link]++ == 0) link_busy_since_[link] = now;
  if (delta < 0 && --link_active_[link] == 0) link_busy_ns_[link] += now - link_busy_since_[link];
}

std::vector<FlowNetwork::FlowId> FlowNetwork::start(TimeNs now, std::vector<Usage> usage, Bytes bytes) {
  const FlowId id = static_cast<FlowId>(flows_.size());
  Flow flow;
  flow.usage = std::move(usage);
  flow.remaining = static_cast<double>(bytes.count());
  flow.bytes = flow.remaining;
  flow.updated = now.base();
  flow.active = true;
  flows_.push_back(std::move(flow));
  flow_mark_.push_back(0);
  std::vector<ResourceId> seeds;
  for (const Usage& u : flows_[id].usage) {
    on_resource_[u.resource].push_back(id);
    link_activity(u.resource, +1, now.base());
    seeds.push_back(u.resource);
  }
  if (seeds.empty()) {  // a transfer that crosses no link (same device): instantaneous
    flows_[id].rate = std::numeric_limits<double>::infinity();
    return {id};
  }
  return reallocate(now.base(), seeds);
}

std::vector<FlowNetwork::FlowId> FlowNetwork::finish(TimeNs now, FlowId id) {
  Flow& flow = flows_[id];
  flow.active = false;
  std::vector<ResourceId> seeds;
  for (const Usage& u : flow.usage) {
    auto& list = on_resource_[u.resource];
    list.erase(std::find(list.begin(), list.end(), id));
    link_activity(u.resource, -1, now.base());
    link_bytes_[u.resource / 2] += flow.bytes * u.count;
    if (!list.empty()) seeds.push_back(u.resource);
  }
  if (seeds.empty()) return {};
  return reallocate(now.base(), seeds);
}

TimeNs FlowNetwork::completion(FlowId id) const {
  const Flow& flow = flows_[id];
  if (std::isinf(flow.rate) || flow.remaining <= 0) return TimeNs::ns(flow.updated);
  // Round up: a transfer is never free, and the flow has surely finished by then.
  return TimeNs::ns(flow.updated + static_cast<std::int64_t>(std::ceil(flow.remaining / flow.rate - 1e-6)));
}

std::vector<FlowNetwork::FlowId> FlowNetwork::reallocate(std::int64_t now, const std::vector<ResourceId>& seeds) {
  // 1. The component: resources and flows reachable from the seeds through active flows.
  ++epoch_;
  std::vector<ResourceId> resources;
  std::vector<FlowId> flows;
  std::vector<ResourceId> stack = seeds;
  while (!stack.empty()) {
    const ResourceId r = stack.back();
    stack.pop_back();
    if (resource_mark_[r] == epoch_) continue;
    resource_mark_[r] = epoch_;
    resources.push_back(r);
    for (const FlowId f : on_resource_[r]) {
      if (flow_mark_[f] == epoch_) continue;
      flow_mark_[f] = epoch_;
      flows.push_back(f);
      for (const Usage& u : flows_[f].usage) {
        if (resource_mark_[u.resource] != epoch_) stack.push_back(u.resource);
      }
    }
  }
  std::sort(resources.begin(), resources.end());
  std::sort(flows.begin(), flows.end());
  for (const FlowId f : flows) progress(f, now);

  // 2. Progressive filling: raise every unfrozen flow's rate together until a resource saturates.
  std::vector<double> remaining_capacity(resources.size());
  std::vector<double> weight(resources.size(), 0.0);
  const auto index_of = [&](ResourceId r) {
    return static_cast<std::size_t>(std::lower_bound(resources.begin(), resources.end(), r) - resources.begin());
  };
  for (std::size_t i = 0; i < resources.size(); ++i) remaining_capacity[i] = capacity_[resources[i]];
  for (const FlowId f : flows) {
    for (const Usage& u : flows_[f].usage) weight[index_of(u.resource)] += u.count;
  }
  std::vector<FlowId> changed;
  std::vector<char> frozen(flows.size(), 0);
  std::size_t unfrozen = flows.size();
  while (unfrozen > 0) {
    std::size_t bottleneck = resources.size();
    double share = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < resources.size(); ++i) {
      if (weight[i] <= 0) continue;
      const double s = std::max(remaining_capacity[i], 0.0) / weight[i];
      if (s < share) {
        share = s;
        bottleneck = i;
      }
    }
    if (bottleneck == resources.size()) break;
    for (std::size_t k = 0; k < flows.size(); ++k) {
      if (frozen[k] != 0) continue;
      const Flow& flow = flows_[flows[k]];
      const bool uses = std::any_of(flow.usage.begin(), flow.usage.end(),
                                    [&](const Usage& u) { return index_of(u.resource) == bottleneck; });
      if (!uses) continue;
      frozen[k] = 1;
      --unfrozen;
      Flow& mutable_flow = flows_[flows[k]];
      if (mutable_flow.rate != share) {
        ++mutable_flow.version;
        changed.push_back(flows[k]);
      }
      mutable_flow.rate = share;
      for (const Usage& u : flow.usage) {
        const std::size_t i = index_of(u.resource);
        remaining_capacity[i] -= share * u.count;
        weight[i] -= u.count;
      }
    }
  }
  std::sort(changed.begin(), changed.end());
  return changed;
}

}  // namespace mpsim::engine
