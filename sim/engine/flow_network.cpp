#include "sim/engine/flow_network.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace mpsim::engine {

double FlowNetwork::rate_alone(std::span<const Usage> usage, double cap) const noexcept {
  double rate = cap;
  for (const Usage& u : usage) rate = std::min(rate, std::max(capacity_[u.resource], 0.0) / static_cast<double>(u.count));
  return rate;
}

double FlowNetwork::state_rate_alone(std::span<const Usage> usage, double cap) const noexcept {
  double rate = cap;
  for (const Usage& u : usage) {
    rate = std::min(rate, std::max(state_capacity_[u.resource], 0.0) / static_cast<double>(u.count));
  }
  return rate;
}

FlowNetwork::FlowNetwork(const topology::Cluster& cluster) {
  const std::size_t links = cluster.links().size();
  capacity_.resize(links * 2);
  for (std::size_t l = 0; l < links; ++l) {
    const double bytes_per_ns = cluster.links()[l].bandwidth.in_bytes_per_sec() * 1e-9;
    capacity_[2 * l] = bytes_per_ns;
    capacity_[2 * l + 1] = bytes_per_ns;
  }
  state_capacity_ = capacity_;
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

const std::vector<FlowNetwork::FlowId>& FlowNetwork::start(TimeNs now, std::vector<Usage>&& usage, Bytes bytes) {
  if (!sets_.empty()) throw std::logic_error("flow network: flows start by declared set");
  owned_usage_.push_back(std::move(usage));
  return start(now, std::span<const Usage>(owned_usage_.back()), bytes);
}

const std::vector<FlowNetwork::FlowId>& FlowNetwork::start(TimeNs now, std::span<const Usage> usage, Bytes bytes,
                                                           BytesPerSec rate_cap) {
  if (!sets_.empty()) throw std::logic_error("flow network: flows start by declared set");
  const FlowId id = static_cast<FlowId>(flows_.size());
  Flow flow;
  flow.usage = usage;
  flow.cap = rate_cap.in_bytes_per_sec() * 1e-9;
  flow.remaining = static_cast<double>(bytes.count());
  flow.bytes = flow.remaining;
  flow.updated = now.base();
  flow.active = true;
  flows_.push_back(std::move(flow));
  flow_mark_.push_back(0);
  seeds_.clear();
  for (const Usage& u : flows_[id].usage) {
    on_resource_[u.resource].push_back(id);
    link_activity(u.resource, +1, now.base());
    seeds_.push_back(u.resource);
  }
  if (seeds_.empty()) {  // a transfer that crosses no link (same device): instantaneous
    flows_[id].rate = std::numeric_limits<double>::infinity();
    changed_.assign(1, id);
    return changed_;
  }
  return reallocate(now.base());
}

const std::vector<FlowNetwork::FlowId>& FlowNetwork::finish(TimeNs now, FlowId id) {
  Flow& flow = flows_[id];
  flow.active = false;
  seeds_.clear();
  if (!sets_.empty()) {
    for (const Usage& u : flow.usage) {
      auto& list = on_resource_[u.resource];
      list.erase(std::find(list.begin(), list.end(), id));
      if (!list.empty()) seeds_.push_back(u.resource);
    }
    // Per link, as below: direction 0's traffic, then direction 1's; busy until no flow crosses it.
    for (const GroupUse& g : sets_[flow.set].groups) {
      if (g.crosses[0]) group_bytes_[g.group] += flow.bytes * g.count[0];
      if (g.crosses[1]) group_bytes_[g.group] += flow.bytes * g.count[1];
      group_active_[g.group] -= static_cast<int>(g.crosses[0]) + static_cast<int>(g.crosses[1]);
      if (group_active_[g.group] == 0) group_busy_ns_[g.group] += now.base() - group_busy_since_[g.group];
    }
    changed_.clear();
    if (seeds_.empty()) return changed_;
    return reallocate(now.base());
  }
  for (const Usage& u : flow.usage) {
    auto& list = on_resource_[u.resource];
    list.erase(std::find(list.begin(), list.end(), id));
    link_activity(u.resource, -1, now.base());
    link_bytes_[u.resource / 2] += flow.bytes * u.count;
    if (!list.empty()) seeds_.push_back(u.resource);
  }
  changed_.clear();
  if (seeds_.empty()) return changed_;
  return reallocate(now.base());
}

void FlowNetwork::use_usage_sets(std::span<const std::span<const Usage>> sets) {
  if (!flows_.empty() || !sets_.empty()) throw std::logic_error("flow network: usage sets are declared once, first");
  constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
  const std::size_t resources = capacity_.size();
  // Classes: start from equal capacities, then split every class by each set's count on it (a
  // direction a set does not cross keeps its class, which no direction the set crosses keeps).
  std::vector<std::uint32_t> of(resources, kNone);
  std::uint32_t next = 0;
  std::map<std::uint64_t, std::uint32_t> by_capacity;
  for (const std::span<const Usage> set : sets) {
    for (std::size_t i = 0; i < set.size(); ++i) {
      if (set[i].resource >= resources || (i > 0 && set[i].resource <= set[i - 1].resource)) {
        throw std::logic_error("flow network: a usage set must be merged (merge_usage)");
      }
      std::uint32_t& c = of[set[i].resource];
      if (c != kNone) continue;
      const auto [it, added] = by_capacity.emplace(std::bit_cast<std::uint64_t>(capacity_[set[i].resource]), next);
      if (added) ++next;
      c = it->second;
    }
  }
  std::unordered_map<std::uint64_t, std::uint32_t> split;
  for (const std::span<const Usage> set : sets) {
    split.clear();
    for (const Usage& u : set) {
      const std::uint64_t key = (static_cast<std::uint64_t>(of[u.resource]) << 32) | u.count;
      const auto [it, added] = split.emplace(key, next);
      if (added) ++next;
      of[u.resource] = it->second;
    }
  }
  // Number the classes by their first member; note each one's last (highest) member.
  std::vector<std::uint32_t> renumber(next, kNone);
  std::vector<std::uint32_t> highest;
  state_capacity_.clear();
  for (std::size_t r = 0; r < resources; ++r) {
    if (of[r] == kNone) continue;
    std::uint32_t& c = renumber[of[r]];
    if (c == kNone) {
      c = static_cast<std::uint32_t>(highest.size());
      highest.push_back(0);
      state_capacity_.push_back(capacity_[r]);
    }
    of[r] = c;
    highest[c] = static_cast<std::uint32_t>(r);
  }
  const std::size_t classes = highest.size();
  on_resource_.assign(classes, {});
  resource_mark_.assign(classes, 0);
  local_index_.assign(classes, 0);
  // Link groups: links whose directions are in the same classes.
  const std::size_t links = resources / 2;
  link_group_.assign(links, kNone);
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> groups;
  for (std::size_t l = 0; l < links; ++l) {
    const std::uint32_t a = of[2 * l];
    const std::uint32_t b = of[2 * l + 1];
    if (a == kNone && b == kNone) continue;
    link_group_[l] = groups.emplace(std::make_pair(a, b), static_cast<std::uint32_t>(groups.size())).first->second;
  }
  group_active_.assign(groups.size(), 0);
  group_busy_since_.assign(groups.size(), 0);
  group_busy_ns_.assign(groups.size(), 0);
  group_bytes_.assign(groups.size(), 0.0);
  // Each set over classes (a set crosses every member of a class it crosses, the same number of times),
  // by the classes' highest members, and over link groups.
  std::vector<std::uint32_t> slot(groups.size(), kNone);
  sets_.resize(sets.size());
  for (std::size_t s = 0; s < sets.size(); ++s) {
    DeclaredSet& d = sets_[s];
    for (const Usage& u : sets[s]) {
      const std::uint32_t c = of[u.resource];
      if (highest[c] == u.resource) d.classes.push_back({c, u.count});
      const std::uint32_t g = link_group_[u.resource / 2];
      if (slot[g] == kNone) {
        slot[g] = static_cast<std::uint32_t>(d.groups.size());
        d.groups.push_back({g, {0, 0}, {false, false}});
      }
      GroupUse& use = d.groups[slot[g]];
      use.crosses[u.resource & 1] = true;
      use.count[u.resource & 1] = u.count;
    }
    for (const GroupUse& g : d.groups) slot[g.group] = kNone;
  }
}

const std::vector<FlowNetwork::FlowId>& FlowNetwork::start(TimeNs now, std::uint32_t set, Bytes bytes,
                                                           BytesPerSec rate_cap) {
  const DeclaredSet& d = sets_.at(set);
  const FlowId id = static_cast<FlowId>(flows_.size());
  Flow flow;
  flow.usage = d.classes;
  flow.cap = rate_cap.in_bytes_per_sec() * 1e-9;
  flow.remaining = static_cast<double>(bytes.count());
  flow.bytes = flow.remaining;
  flow.updated = now.base();
  flow.active = true;
  flow.set = set;
  flows_.push_back(flow);
  flow_mark_.push_back(0);
  seeds_.clear();
  for (const Usage& u : d.classes) {
    on_resource_[u.resource].push_back(id);
    seeds_.push_back(u.resource);
  }
  for (const GroupUse& g : d.groups) {
    if (group_active_[g.group] == 0) group_busy_since_[g.group] = now.base();
    group_active_[g.group] += static_cast<int>(g.crosses[0]) + static_cast<int>(g.crosses[1]);
  }
  if (seeds_.empty()) {  // a transfer that crosses no link (same device): instantaneous
    flows_[id].rate = std::numeric_limits<double>::infinity();
    changed_.assign(1, id);
    return changed_;
  }
  return reallocate(now.base());
}

void FlowNetwork::expand_link_groups() const noexcept {
  if (sets_.empty()) return;
  for (std::size_t l = 0; l < link_group_.size(); ++l) {
    const std::uint32_t g = link_group_[l];
    if (g == std::numeric_limits<std::uint32_t>::max()) continue;
    link_bytes_[l] = group_bytes_[g];
    link_busy_ns_[l] = group_busy_ns_[g];
  }
}

TimeNs FlowNetwork::completion(FlowId id) const {
  const Flow& flow = flows_[id];
  if (std::isinf(flow.rate) || flow.remaining <= 0) return TimeNs::ns(flow.updated);
  // Round up: a transfer is never free, and the flow has surely finished by then.
  return TimeNs::ns(flow.updated + static_cast<std::int64_t>(std::ceil(flow.remaining / flow.rate - 1e-6)));
}

const std::vector<FlowNetwork::FlowId>& FlowNetwork::reallocate(std::int64_t now) {
  // 1. The component: resources and flows reachable from the seeds through active flows.
  ++epoch_;
  std::vector<ResourceId>& resources = component_resources_;
  std::vector<FlowId>& flows = component_flows_;
  resources.clear();
  flows.clear();
  std::vector<ResourceId>& stack = seeds_;  // consumed as the search stack
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
  // No sorting: the search order is a function of the inputs, so it is deterministic already.
  for (const FlowId f : flows) progress(f, now);
  changed_.clear();
  if (flows.size() == 1) {
    // A flow alone on its links (a tensor-parallel ring inside an idle node, say): its rate is its
    // tightest link's capacity over its count there, what progressive filling below would give.
    Flow& flow = flows_[flows.front()];
    const double share = state_rate_alone(flow.usage, flow.cap);
    if (flow.rate != share) {
      ++flow.version;
      changed_.push_back(flows.front());
    }
    flow.rate = share;
    return changed_;
  }

  // 2. Progressive filling: raise every unfrozen flow's rate together; the resource whose fair share
  // is smallest saturates first and fixes the rates of its flows. A heap keyed by share, with stale
  // entries skipped, makes it O(usage log resources). The flows of each resource are kept in one
  // array indexed by offsets (no allocation per resource).
  const std::size_t n = resources.size();
  for (std::size_t i = 0; i < n; ++i) local_index_[resources[i]] = static_cast<std::uint32_t>(i);
  remaining_capacity_.resize(n);
  weight_.assign(n, 0.0);
  flows_on_offset_.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) remaining_capacity_[i] = state_capacity_[resources[i]];
  for (const FlowId f : flows) {
    for (const Usage& u : flows_[f].usage) {
      const std::uint32_t i = local_index_[u.resource];
      weight_[i] += u.count;
      ++flows_on_offset_[i + 1];
    }
  }
  for (std::size_t i = 0; i < n; ++i) flows_on_offset_[i + 1] += flows_on_offset_[i];
  flows_on_.resize(flows_on_offset_[n]);
  fill_cursor_.assign(flows_on_offset_.begin(), flows_on_offset_.end() - 1);
  for (std::uint32_t k = 0; k < flows.size(); ++k) {
    for (const Usage& u : flows_[flows[k]].usage) flows_on_[fill_cursor_[local_index_[u.resource]]++] = k;
  }
  const auto share_of = [&](std::uint32_t i) { return std::max(remaining_capacity_[i], 0.0) / weight_[i]; };
  // A resource crossed by one flow of the component only ever limits that flow, at its full
  // capacity / count: it becomes the flow's private limit (an entry n + k in the heap) instead of a
  // heap entry of its own that every saturation round would refresh. Most links of a flow standing for
  // many replicas are such private links.
  const auto flow_count = [&](std::uint32_t i) { return flows_on_offset_[i + 1] - flows_on_offset_[i]; };
  // A flow's cap is one more private limit.
  private_limit_.resize(flows.size());
  for (std::size_t k = 0; k < flows.size(); ++k) private_limit_[k] = flows_[flows[k]].cap;
  heap_.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    if (weight_[i] <= 0) continue;
    if (flow_count(i) == 1) {
      double& limit = private_limit_[flows_on_[flows_on_offset_[i]]];
      limit = std::min(limit, share_of(i));
    } else {
      heap_.emplace_back(share_of(i), i);
    }
  }
  for (std::uint32_t k = 0; k < flows.size(); ++k) {
    if (!std::isinf(private_limit_[k])) heap_.emplace_back(private_limit_[k], n + k);
  }
  std::make_heap(heap_.begin(), heap_.end(), std::greater<>{});
  frozen_.assign(flows.size(), 0);
  touched_mark_.assign(n, 0);
  touched_.clear();
  std::uint32_t round = 1;
  const auto freeze = [&](std::uint32_t k, double share) {
    frozen_[k] = 1;
    Flow& flow = flows_[flows[k]];
    if (flow.rate != share) {
      ++flow.version;
      changed_.push_back(flows[k]);
    }
    flow.rate = share;
    for (const Usage& u : flow.usage) {
      const std::uint32_t j = local_index_[u.resource];
      remaining_capacity_[j] -= share * u.count;
      weight_[j] -= u.count;
      if (touched_mark_[j] != round && flow_count(j) > 1) {
        touched_mark_[j] = round;
        touched_.push_back(j);
      }
    }
  };
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
    const auto [share, i] = heap_.back();
    heap_.pop_back();
    if (i >= n) {  // a flow's private limit: valid until the flow is frozen
      if (frozen_[i - n] == 0) freeze(i - n, share);
    } else {
      if (weight_[i] <= 1e-12 || share != share_of(i)) continue;  // saturated already, or a stale entry
      touched_mark_[i] = round;  // saturated: no fresh entry
      for (std::uint32_t e = flows_on_offset_[i]; e < flows_on_offset_[i + 1]; ++e) {
        if (frozen_[flows_on_[e]] == 0) freeze(flows_on_[e], share);
      }
    }
    // One fresh heap entry per shared resource whose share moved (not one per flow crossing it): the
    // old entries go stale and are skipped when popped.
    for (const std::uint32_t j : touched_) {
      if (weight_[j] > 1e-12) {
        heap_.emplace_back(share_of(j), j);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
      }
    }
    touched_.clear();
    ++round;
  }
  std::sort(changed_.begin(), changed_.end());
  return changed_;
}

}  // namespace mpsim::engine
