#include "sim/engine/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace mpsim::engine {

void add_route_usage(const topology::Cluster& cluster, const topology::Route& route, std::vector<Usage>& usage) {
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const topology::Link& link = cluster.link(route.links[i]);
    const bool forward = link.a == route.hops[i];
    const ResourceId r = route.links[i].value * 2 + (link.duplex == topology::Duplex::Half || forward ? 0u : 1u);
    usage.push_back({r, 1});
  }
}

void merge_usage(std::vector<Usage>& usage) {
  std::sort(usage.begin(), usage.end(), [](const Usage& a, const Usage& b) { return a.resource < b.resource; });
  std::size_t out = 0;
  for (std::size_t i = 0; i < usage.size(); ++i) {
    if (out > 0 && usage[out - 1].resource == usage[i].resource) {
      usage[out - 1].count += usage[i].count;
    } else {
      usage[out++] = usage[i];
    }
  }
  usage.resize(out);
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
  local_index_.resize(links * 2, 0);
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

  // 2. Progressive filling: raise every unfrozen flow's rate together; the resource whose fair share
  // is smallest saturates first and fixes the rates of its flows. A heap keyed by share, with stale
  // entries skipped, makes it O(usage log resources).
  for (std::size_t i = 0; i < resources.size(); ++i) local_index_[resources[i]] = static_cast<std::uint32_t>(i);
  std::vector<double> remaining_capacity(resources.size());
  std::vector<double> weight(resources.size(), 0.0);
  std::vector<std::vector<std::uint32_t>> flows_on(resources.size());
  for (std::size_t i = 0; i < resources.size(); ++i) remaining_capacity[i] = capacity_[resources[i]];
  for (std::uint32_t k = 0; k < flows.size(); ++k) {
    for (const Usage& u : flows_[flows[k]].usage) {
      const std::uint32_t i = local_index_[u.resource];
      weight[i] += u.count;
      flows_on[i].push_back(k);
    }
  }
  using Entry = std::pair<double, std::uint32_t>;  // share, local resource
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  const auto share_of = [&](std::uint32_t i) { return std::max(remaining_capacity[i], 0.0) / weight[i]; };
  for (std::uint32_t i = 0; i < resources.size(); ++i) {
    if (weight[i] > 0) heap.emplace(share_of(i), i);
  }
  std::vector<FlowId> changed;
  std::vector<char> frozen(flows.size(), 0);
  while (!heap.empty()) {
    const auto [share, i] = heap.top();
    heap.pop();
    if (weight[i] <= 1e-12 || share != share_of(i)) continue;  // saturated already, or a stale entry
    for (const std::uint32_t k : flows_on[i]) {
      if (frozen[k] != 0) continue;
      frozen[k] = 1;
      Flow& flow = flows_[flows[k]];
      if (flow.rate != share) {
        ++flow.version;
        changed.push_back(flows[k]);
      }
      flow.rate = share;
      for (const Usage& u : flow.usage) {
        const std::uint32_t j = local_index_[u.resource];
        remaining_capacity[j] -= share * u.count;
        weight[j] -= u.count;
        if (j != i && weight[j] > 1e-12) heap.emplace(share_of(j), j);
      }
    }
  }
  std::sort(changed.begin(), changed.end());
  return changed;
}

}  // namespace mpsim::engine
