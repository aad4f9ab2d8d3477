#include "sim/engine/collectives.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/engine/collective_tuning.h"
#include "sim/model/model.h"

namespace mpsim::engine {

std::vector<std::vector<topology::DeviceId>> device_groups(const topology::Cluster& cluster, const plan::Layout& layout,
                                                           const std::vector<int>& members, plan::AxisSet axes) {
  std::set<int> seen;
  std::vector<std::vector<topology::DeviceId>> groups;
  for (const int m : members) {
    const std::vector<int> g = layout.group(m, axes);
    if (!seen.insert(g.front()).second) continue;
    std::vector<topology::DeviceId> devices;
    devices.reserve(g.size());
    for (const int r : g) devices.push_back(cluster.gpus().at(static_cast<std::size_t>(r)));
    groups.push_back(std::move(devices));
  }
  return groups;
}

namespace {

using topology::DeviceId;
using Groups = std::vector<std::vector<DeviceId>>;

Bytes share(Bytes size, std::size_t parts) {
  const auto n = static_cast<std::int64_t>(parts);
  return Bytes::bytes((size.count() + n - 1) / n);
}

/// A phase of `rounds` rounds in which every member of every ring sends `bytes` to the next member.
void ring_rounds(const Groups& rings, Bytes bytes, std::size_t rounds, std::vector<CollectiveRound>& out,
                 bool nvls = false) {
  CollectiveRound phase;
  phase.nvls = nvls;
  phase.bytes = bytes;
  phase.rounds = static_cast<int>(rounds);
  for (const auto& ring : rings) {
    if (ring.size() < 2) continue;
    for (std::size_t i = 0; i < ring.size(); ++i) phase.transfers.emplace_back(ring[i], ring[(i + 1) % ring.size()]);
  }
  if (phase.transfers.empty() || rounds == 0) return;
  out.push_back(std::move(phase));
}

std::size_t steps(CollectiveKind kind, std::size_t n) {
  return kind == CollectiveKind::AllReduce ? 2 * (n - 1) : n - 1;
}

/// Splits each group by node: {intra-node rings}, {inter-node rings of equal local index}. Empty when
/// the group does not have the same number (> 1) of members on each of several nodes.
std::pair<Groups, Groups> split_by_node(const topology::Cluster& cluster, const Groups& groups) {
  Groups local, across;
  for (const auto& group : groups) {
    std::map<int, std::vector<DeviceId>> by_node;
    for (const DeviceId d : group) by_node[cluster.device(d).node].push_back(d);
    const std::size_t per_node = by_node.begin()->second.size();
    if (by_node.size() < 2 || per_node < 2) return {};
    for (const auto& [node, members] : by_node) {
      if (members.size() != per_node) return {};
      local.push_back(members);
    }
    for (std::size_t i = 0; i < per_node; ++i) {
      std::vector<DeviceId> ring;
      for (const auto& [node, members] : by_node) ring.push_back(members[i]);
      across.push_back(ring);
    }
  }
  return {local, across};
}

/// Up (child to parent, `up` = true) or down the binary tree of every group: member i's parent is
/// (i - 1) / 2. A phase of `depth` rounds of size/depth bytes: one latency per level, `size` per edge.
void tree_phase(const Groups& groups, Bytes size, bool up, std::vector<CollectiveRound>& out) {
  CollectiveRound phase;
  std::size_t depth = 0;
  for (const auto& group : groups) {
    for (std::size_t i = 1; i < group.size(); ++i) {
      const std::size_t parent = (i - 1) / 2;
      phase.transfers.emplace_back(up ? group[i] : group[parent], up ? group[parent] : group[i]);
      std::size_t level = 0;
      for (std::size_t k = i; k > 0; k = (k - 1) / 2) ++level;
      depth = std::max(depth, level);
    }
  }
  if (phase.transfers.empty()) return;
  phase.rounds = static_cast<int>(depth);
  phase.bytes = share(size, depth);
  out.push_back(std::move(phase));
}

bool spans_nodes(const topology::Cluster& cluster, const std::vector<DeviceId>& group) {
  return std::any_of(group.begin(), group.end(),
                     [&](DeviceId d) { return cluster.device(d).node != cluster.device(group.front()).node; });
}

}  // namespace

Groups ring_channels(const topology::Cluster& cluster, const std::vector<DeviceId>& group) {
  std::map<int, std::vector<DeviceId>> by_node;
  for (const DeviceId d : group) by_node[cluster.device(d).node].push_back(d);
  const std::size_t k = by_node.begin()->second.size();
  const bool even = std::all_of(by_node.begin(), by_node.end(), [&](const auto& e) { return e.second.size() == k; });
  if (by_node.size() < 2 || !even) return {group};
  for (auto& [node, members] : by_node) {
    std::sort(members.begin(), members.end(), [&](DeviceId a, DeviceId b) {
      return cluster.device(a).local_index < cluster.device(b).local_index;
    });
  }
  Groups channels;
  for (std::size_t c = 0; c < k; ++c) {
    std::vector<DeviceId> ring;
    ring.reserve(group.size());
    std::size_t i = 0;
    for (const auto& [node, members] : by_node) {
      std::vector<DeviceId> visit(members.size());
      for (std::size_t j = 0; j < k; ++j) visit[j] = members[(j + c) % k];
      if (i++ % 2 == 1) std::reverse(visit.begin(), visit.end());  // enter where the previous node left
      ring.insert(ring.end(), visit.begin(), visit.end());
    }
    channels.push_back(std::move(ring));
  }
  return channels;
}

std::vector<CollectiveAlgorithm> auto_candidates(const topology::Cluster& cluster, CollectiveKind kind,
                                                 const Groups& groups) {
  std::vector<CollectiveAlgorithm> out{CollectiveAlgorithm::Ring};
  if (kind != CollectiveKind::AllReduce || groups.empty()) return out;
  if (std::all_of(groups.begin(), groups.end(), [&](const auto& g) { return nvls_eligible(cluster, g); })) {
    out.push_back(CollectiveAlgorithm::Nvls);
  }
  if (spans_nodes(cluster, groups.front())) out.push_back(CollectiveAlgorithm::Tree);
  return out;
}

std::optional<TokenRouting> token_routing(const model::Model& model, const plan::Plan& plan) {
  if (!plan::deduplicates_tokens(plan.dispatcher) || !model.shape || !model.shape->moe) return std::nullopt;
  return TokenRouting{model.shape->moe->experts, static_cast<int>(model.shape->moe->top_k)};
}

const TokenRouting* expert_routing(const std::optional<TokenRouting>& routing, CollectiveKind kind,
                                   plan::AxisSet group) noexcept {
  const bool expert_exchange = kind == CollectiveKind::AllToAll && group == plan::AxisSet(plan::Axis::Expert);
  return expert_exchange && routing ? &*routing : nullptr;
}

double token_hit_fraction(std::int64_t experts, int top_k, std::int64_t held) noexcept {
  if (experts <= 0 || held >= experts) return 1.0;
  double missed = 1.0;  // all top_k experts outside the `held` ones
  for (int i = 0; i < top_k && i < experts; ++i) {
    missed *= static_cast<double>(std::max<std::int64_t>(0, experts - held - i)) / static_cast<double>(experts - i);
  }
  return 1.0 - missed;
}

std::vector<CollectiveRound> token_dispatch_rounds(const topology::Cluster& cluster, const Groups& groups, Bytes size,
                                                   const TokenRouting& routing) {
  std::vector<CollectiveRound> out;
  if (groups.empty() || groups.front().size() < 2 || size.count() == 0) return out;
  const auto n = static_cast<std::int64_t>(groups.front().size());
  const double tokens = static_cast<double>(size.count()) / std::max(1, routing.top_k);
  // `senders` members' tokens, each sent once to a member holding `members_holding` members' experts.
  const auto once_per = [&](std::int64_t members_holding, std::size_t senders) {
    const std::int64_t held = routing.experts * members_holding / n;
    return Bytes::bytes(static_cast<std::int64_t>(std::ceil(
        tokens * static_cast<double>(senders) * token_hit_fraction(routing.experts, routing.top_k, held))));
  };
  // Members by node and local index; a group split unevenly over its nodes is one flat phase.
  std::vector<Groups> nodes_of_groups;
  bool even = true;
  for (const auto& group : groups) {
    std::map<int, std::vector<DeviceId>> by_node;
    for (const DeviceId d : group) by_node[cluster.device(d).node].push_back(d);
    const std::size_t first_size = by_node.begin()->second.size();
    Groups nodes;
    for (auto& [node, members] : by_node) {
      std::sort(members.begin(), members.end(), [&](DeviceId a, DeviceId b) {
        return cluster.device(a).local_index < cluster.device(b).local_index;
      });
      even = even && members.size() == first_size;
      nodes.push_back(std::move(members));
    }
    nodes_of_groups.push_back(std::move(nodes));
  }
  if (!even) nodes_of_groups.assign(1, groups);  // every group as one "node": the flat phase below
  const std::size_t node_count = even ? nodes_of_groups.front().size() : 1;
  const std::size_t per_node = even ? nodes_of_groups.front().front().size() : static_cast<std::size_t>(n);
  CollectiveRound across;  // to the same local index of every other node
  across.bytes = once_per(static_cast<std::int64_t>(per_node), 1);
  CollectiveRound inside;  // to every other member of the node
  inside.bytes = once_per(1, node_count);  // its own tokens and its rail's from the other nodes
  for (const Groups& nodes : nodes_of_groups) {
    for (std::size_t a = 0; a < nodes.size(); ++a) {
      for (std::size_t i = 0; i < nodes[a].size(); ++i) {
        for (std::size_t b = 0; b < nodes.size() && even; ++b) {
          if (b != a) across.transfers.emplace_back(nodes[a][i], nodes[b][i]);
        }
        for (std::size_t j = 0; j < nodes[a].size(); ++j) {
          if (j != i) inside.transfers.emplace_back(nodes[a][i], nodes[a][j]);
        }
      }
    }
  }
  if (!across.transfers.empty()) out.push_back(std::move(across));
  if (!inside.transfers.empty()) out.push_back(std::move(inside));
  return out;
}

std::vector<CollectiveRound> collective_rounds(const topology::Cluster& cluster, CollectiveKind kind,
                                               CollectiveAlgorithm algorithm, const Groups& groups, Bytes size,
                                               const TokenRouting* routing) {
  std::vector<CollectiveRound> out;
  if (groups.empty() || groups.front().size() < 2 || size.count() == 0) return out;
  const std::size_t n = groups.front().size();
  if (kind == CollectiveKind::AllToAll && routing != nullptr) return token_dispatch_rounds(cluster, groups, size, *routing);
  if (kind == CollectiveKind::AllToAll) {
    CollectiveRound phase;
    phase.bytes = share(size, n);
    for (const auto& group : groups) {
      for (std::size_t i = 0; i < group.size(); ++i) {
        for (std::size_t j = 0; j < group.size(); ++j) {
          if (i != j) phase.transfers.emplace_back(group[i], group[j]);
        }
      }
    }
    out.push_back(std::move(phase));
    return out;
  }
  if (algorithm == CollectiveAlgorithm::Tree && kind == CollectiveKind::AllReduce) {
    tree_phase(groups, size, true, out);   // reduce to the root
    tree_phase(groups, size, false, out);  // broadcast from it
    return out;
  }
  if (algorithm == CollectiveAlgorithm::Nvls && kind == CollectiveKind::AllReduce) {
    // Reduce (multimem.ld_reduce of the member's shard) and multicast (multimem.st): per member about
    // size (n + 1) / n each way over its switch links, in two steps.
    ring_rounds(groups, share(Bytes::bytes(size.count() * static_cast<std::int64_t>(n + 1)), 2 * n), 2, out, true);
    return out;
  }
  if (algorithm == CollectiveAlgorithm::Hierarchical && kind == CollectiveKind::AllReduce) {
    const auto [local, across] = split_by_node(cluster, groups);
    if (!local.empty()) {
      const std::size_t k = local.front().size();
      const std::size_t nodes = across.front().size();
      ring_rounds(local, share(size, k), k - 1, out);                        // reduce-scatter in the node
      ring_rounds(across, share(size, k * nodes), 2 * (nodes - 1), out);    // all-reduce of one shard
      ring_rounds(local, share(size, k), k - 1, out);                        // all-gather in the node
      return out;
    }
  }
  Groups rings;
  for (const auto& group : groups) {
    for (auto& ring : ring_channels(cluster, group)) rings.push_back(std::move(ring));
  }
  const std::size_t channels = rings.size() / groups.size();
  ring_rounds(rings, share(size, n * channels), steps(kind, n), out);
  return out;
}

}  // namespace mpsim::engine
