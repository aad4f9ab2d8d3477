// Expansion of a TopologySpec into the cluster graph: nodes from templates, then the fabric.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/topology/route_table.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::topology {
namespace {

[[noreturn]] void fail_at(const SpecOrigin& origin, const std::string& message) {
  throw InputError(origin.where, origin.field, message);
}

/// The devices of one node, by local name, for resolving link endpoints.
struct NodeDevices {
  std::vector<std::pair<std::string, DeviceId>> by_local_name;  // in creation order

  void add(std::string local, DeviceId id) { by_local_name.emplace_back(std::move(local), id); }

  /// Resolves `gpu3`, `gpu*` or `gpu[0-3]` to devices; empty when nothing matches.
  [[nodiscard]] std::vector<DeviceId> resolve(const std::string& pattern) const {
    std::vector<DeviceId> out;
    if (!pattern.empty() && pattern.back() == '*') {
      const std::string prefix = pattern.substr(0, pattern.size() - 1);
      for (const auto& [name, id] : by_local_name) {
        if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
            std::isdigit(static_cast<unsigned char>(name[prefix.size()]))) {
          out.push_back(id);
        }
      }
      return out;
    }
    const auto open = pattern.find('[');
    if (open != std::string::npos && pattern.back() == ']') {
      const std::string prefix = pattern.substr(0, open);
      const std::string range = pattern.substr(open + 1, pattern.size() - open - 2);
      const auto dash = range.find('-');
      int lo = 0;
      int hi = -1;
      if (dash == std::string::npos) return out;
      const auto r1 = std::from_chars(range.data(), range.data() + dash, lo);
      const auto r2 = std::from_chars(range.data() + dash + 1, range.data() + range.size(), hi);
      if (r1.ec != std::errc() || r2.ec != std::errc() || lo > hi) return out;
      for (int i = lo; i <= hi; ++i) {
        const auto found = find(fmt::format("{}{}", prefix, i));
        if (!found) return {};
        out.push_back(*found);
      }
      return out;
    }
    if (const auto found = find(pattern)) out.push_back(*found);
    return out;
  }

  [[nodiscard]] std::optional<DeviceId> find(const std::string& local) const {
    for (const auto& [name, id] : by_local_name) {
      if (name == local) return id;
    }
    return std::nullopt;
  }

  [[nodiscard]] std::string summary() const {
    std::map<std::string, int> counts;
    for (const auto& [name, id] : by_local_name) {
      std::string kind = name;
      while (!kind.empty() && std::isdigit(static_cast<unsigned char>(kind.back()))) kind.pop_back();
      ++counts[kind];
    }
    std::string out;
    for (const auto& [kind, n] : counts) {
      out += n == 1 ? fmt::format("{}{}0", out.empty() ? "" : ", ", kind)
                    : fmt::format("{}{}[0-{}]", out.empty() ? "" : ", ", kind, n - 1);
    }
    return out;
  }
};

std::string local_name(const Cluster& c, DeviceId id) {
  const std::string& full = c.device(id).name;
  return full.substr(full.find('/') + 1);
}

void add_node_links(Cluster& cluster, const NodeSpec& tmpl, const NodeDevices& devices, int node) {
  for (const LinkSpec& spec : tmpl.links) {
    std::vector<std::pair<DeviceId, DeviceId>> ends;
    const auto resolve = [&](const std::string& pattern) {
      auto found = devices.resolve(pattern);
      if (found.empty()) {
        fail_at(spec.origin, fmt::format("link endpoint '{}' matches no device of this node (it has {})", pattern,
                                         devices.summary()));
      }
      return found;
    };
    if (!spec.pairs.empty()) {
      for (const auto& [a, b] : spec.pairs) {
        const auto da = resolve(a);
        const auto db = resolve(b);
        if (da.size() != 1 || db.size() != 1) fail_at(spec.origin, "a pair names two single devices, not patterns");
        if (da[0] == db[0]) fail_at(spec.origin, fmt::format("link from '{}' to itself", a));
        ends.emplace_back(da[0], db[0]);
      }
    } else {
      std::set<std::pair<std::uint32_t, std::uint32_t>> seen;  // a mesh lists each pair once
      for (const auto& from : spec.from) {
        for (const DeviceId a : resolve(from)) {
          for (const auto& to : spec.to) {
            for (const DeviceId b : resolve(to)) {
              if (a == b) continue;
              if (!seen.insert({std::min(a.value, b.value), std::max(a.value, b.value)}).second) continue;
              ends.emplace_back(a, b);
            }
          }
        }
      }
      if (ends.empty()) fail_at(spec.origin, "these endpoints make no link");
    }
    for (const auto& [a, b] : ends) {
      Link link;
      link.name = fmt::format("node{}/{}:{}-{}", node, to_string(spec.kind), local_name(cluster, a), local_name(cluster, b));
      link.a = a;
      link.b = b;
      link.kind = spec.kind;
      link.bandwidth = spec.bandwidth * static_cast<double>(spec.count);
      link.latency = spec.latency;
      link.duplex = spec.duplex;
      cluster.add_link(std::move(link));
    }
  }
}

void add_node(Cluster& cluster, const TopologySpec& spec, const NodeGroup& group, const NodeSpec& tmpl, int node,
              std::vector<DeviceId>& nics) {
  const GpuKind* kind = find_gpu_kind(spec, tmpl.gpu_kind);
  if (kind == nullptr) {
    fail_at(tmpl.origin.field.empty() ? group.origin : tmpl.origin,
            fmt::format("unknown GPU kind '{}' (known: {})", tmpl.gpu_kind, known_gpu_kinds(spec)));
  }
  const int kind_index = cluster.add_gpu_kind(*kind);
  NodeDevices devices;
  const auto add = [&](DeviceKind k, int count, std::string_view prefix) {
    for (int j = 0; j < count; ++j) {
      Device d;
      d.name = fmt::format("node{}/{}{}", node, prefix, j);
      d.kind = k;
      d.node = node;
      d.local_index = j;
      if (k == DeviceKind::Gpu) d.gpu_kind = kind_index;
      const DeviceId id = cluster.add_device(std::move(d));
      devices.add(fmt::format("{}{}", prefix, j), id);
      if (k == DeviceKind::Nic) nics.push_back(id);
    }
  };
  add(DeviceKind::Gpu, tmpl.gpus, "gpu");
  add(DeviceKind::NvSwitch, tmpl.nvswitches, "nvswitch");
  add(DeviceKind::PcieSwitch, tmpl.pcie_switches, "pcie-switch");
  add(DeviceKind::Cpu, tmpl.cpus, "cpu");
  add(DeviceKind::Nic, tmpl.nics.count, "nic");
  add_node_links(cluster, tmpl, devices, node);
}

DeviceId add_switch(Cluster& cluster, std::string name) {
  Device d;
  d.name = "fabric/" + std::move(name);
  d.kind = DeviceKind::FabricSwitch;
  return cluster.add_device(std::move(d));
}

void add_net_link(Cluster& cluster, DeviceId below, DeviceId above, BytesPerSec bandwidth, TimeNs latency) {
  Link link;
  link.name = fmt::format("net:{}-{}", cluster.device(below).name, cluster.device(above).name);
  link.a = below;
  link.b = above;
  link.kind = LinkKind::Net;
  link.bandwidth = bandwidth;
  link.latency = latency;
  cluster.add_link(std::move(link));
}

/// One switch level: groups `children` into parents of `fan_in` and links each child to its parent
/// with the child's aggregate bandwidth divided by the oversubscription.
std::vector<DeviceId> add_level(Cluster& cluster, const std::vector<std::pair<DeviceId, BytesPerSec>>& children,
                                int fan_in, const std::function<std::string(int)>& name_of, double oversubscription,
                                TimeNs latency, std::vector<BytesPerSec>& parent_bandwidth) {
  std::vector<DeviceId> parents;
  parent_bandwidth.clear();
  const int per = fan_in > 0 ? fan_in : static_cast<int>(children.size());
  for (std::size_t i = 0; i < children.size(); ++i) {
    const int p = static_cast<int>(i) / per;
    if (static_cast<std::size_t>(p) == parents.size()) {
      parents.push_back(add_switch(cluster, name_of(p)));
      parent_bandwidth.push_back(BytesPerSec{});
    }
    add_net_link(cluster, children[i].first, parents[static_cast<std::size_t>(p)],
                 children[i].second / oversubscription, latency);
    parent_bandwidth[static_cast<std::size_t>(p)] += children[i].second / oversubscription;
  }
  return parents;
}

void add_fabric(Cluster& cluster, const FabricSpec& fabric, const std::vector<DeviceId>& nics,
                const std::vector<BytesPerSec>& nic_bandwidth, const std::vector<TimeNs>& nic_latency) {
  if (fabric.kind == FabricKind::SingleSwitch) {
    const DeviceId sw = add_switch(cluster, "switch0");
    for (std::size_t i = 0; i < nics.size(); ++i) add_net_link(cluster, nics[i], sw, nic_bandwidth[i], nic_latency[i]);
    return;
  }
  // Leaves: a rail-optimized fabric groups NIC r of every node on rail r's leaves.
  std::vector<std::size_t> order(nics.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<DeviceId> leaves;
  std::vector<BytesPerSec> leaf_bandwidth;
  const auto attach = [&](const std::vector<std::size_t>& members, const std::string& prefix) {
    const std::size_t per = fabric.leaf_ports > 0 ? static_cast<std::size_t>(fabric.leaf_ports) : members.size();
    for (std::size_t k = 0; k < members.size(); ++k) {
      if (k % per == 0) {
        leaves.push_back(add_switch(cluster, fmt::format("{}leaf{}", prefix, k / per)));
        leaf_bandwidth.push_back(BytesPerSec{});
      }
      const std::size_t i = members[k];
      add_net_link(cluster, nics[i], leaves.back(), nic_bandwidth[i], nic_latency[i]);
      leaf_bandwidth.back() += nic_bandwidth[i];
    }
  };
  if (fabric.kind == FabricKind::RailOptimized) {
    std::map<int, std::vector<std::size_t>> rails;
    for (std::size_t i = 0; i < nics.size(); ++i) rails[cluster.device(nics[i]).local_index].push_back(i);
    for (const auto& [rail, members] : rails) attach(members, fmt::format("rail{}-", rail));
  } else {
    attach(order, "");
  }
  std::vector<std::pair<DeviceId, BytesPerSec>> level;
  for (std::size_t i = 0; i < leaves.size(); ++i) level.emplace_back(leaves[i], leaf_bandwidth[i]);
  std::vector<BytesPerSec> upper_bandwidth;
  if (fabric.levels == 2) {
    add_level(cluster, level, 0, [](int) { return std::string("spine0"); }, fabric.oversubscription,
              fabric.switch_latency, upper_bandwidth);
  } else if (fabric.levels == 3) {
    const auto pods = add_level(cluster, level, fabric.pod_leaves, [](int p) { return fmt::format("pod{}-spine", p); },
                                fabric.oversubscription, fabric.switch_latency, upper_bandwidth);
    std::vector<std::pair<DeviceId, BytesPerSec>> pod_level;
    for (std::size_t i = 0; i < pods.size(); ++i) pod_level.emplace_back(pods[i], upper_bandwidth[i]);
    std::vector<BytesPerSec> core_bandwidth;
    add_level(cluster, pod_level, 0, [](int) { return std::string("core0"); }, fabric.oversubscription,
              fabric.switch_latency, core_bandwidth);
  }
}

/// Every GPU must be reachable from the first one under the routing rules (GPUs and NICs do not
/// bridge), not merely connected in the graph.
void check_connected(const Cluster& cluster, const TopologySpec& spec) {
  const auto cut = first_unreachable_gpu(cluster);
  if (!cut) return;
  const Device& d = cluster.device(*cut);
  const Device& first = cluster.device(cluster.gpus().front());
  const SpecOrigin& origin = spec.templates.begin()->second.origin;
  fail_at(origin, fmt::format("{} is not connected to {}{}", d.name, first.name,
                              d.node == first.node ? " (add a link to it; GPUs and NICs do not bridge other devices)"
                                                   : " (the nodes need NICs and a 'fabric')"));
}

}  // namespace

const GpuKind* find_gpu_kind(const TopologySpec& spec, std::string_view name) {
  for (const GpuKind& k : spec.custom_gpu_kinds) {
    if (k.id == name) return &k;
  }
  return GpuCatalog::builtin().find(name);
}

std::string known_gpu_kinds(const TopologySpec& spec) {
  std::string known;
  for (const auto& k : spec.custom_gpu_kinds) known += (known.empty() ? "" : ", ") + k.id;
  for (const auto& n : GpuCatalog::builtin().names()) known += (known.empty() ? "" : ", ") + n;
  return known;
}

Cluster build_cluster(const TopologySpec& spec) {
  Cluster cluster;
  cluster.name = spec.name;
  cluster.profile_file = spec.profile;
  std::vector<DeviceId> nics;
  std::vector<BytesPerSec> nic_bandwidth;
  std::vector<TimeNs> nic_latency;
  int node = 0;
  for (const NodeGroup& group : spec.nodes) {
    const NodeSpec& tmpl = spec.templates.at(group.template_name);
    for (int i = 0; i < group.count; ++i, ++node) {
      add_node(cluster, spec, group, tmpl, node, nics);
      nic_bandwidth.resize(nics.size(), tmpl.nics.bandwidth);
      nic_latency.resize(nics.size(), tmpl.nics.latency);
    }
  }
  cluster.node_count = node;
  // A name may count the nodes ("{nodes}x DGX H100"), so that --set topology.nodes=N and --gpus keep it true.
  for (std::size_t at = cluster.name.find("{nodes}"); at != std::string::npos; at = cluster.name.find("{nodes}")) {
    cluster.name.replace(at, std::string_view("{nodes}").size(), std::to_string(node));
  }
  if (spec.fabric) {
    if (nics.empty()) fail_at(spec.fabric->origin, "a fabric needs NICs in the nodes ('nics' of the node template)");
    // One node sends nothing over the network: its file may name the fabric its nodes join when scaled
    // (--set topology.nodes=N) without adding switches that no route uses.
    if (cluster.node_count > 1) add_fabric(cluster, *spec.fabric, nics, nic_bandwidth, nic_latency);
  }
  check_connected(cluster, spec);
  return cluster;
}

}  // namespace mpsim::topology
