// Cluster::only_gpu_kind and only_nodes: a part of a cluster (one GPU kind's nodes, or any of its nodes) as a
// cluster of its own.
#include <cctype>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/topology/cluster.h"

namespace mpsim::topology {
namespace {

/// `name` with every `node<i>/` whose i `renumbered` maps written `node<j>/` ("net:node2/nic0-fabric/switch0"
/// becomes "net:node0/nic0-fabric/switch0"). A `node` that follows a letter or digit is part of another word.
std::string with_nodes_renumbered(std::string_view name, const std::map<int, int>& renumbered) {
  std::string out;
  std::size_t at = 0;
  while (at < name.size()) {
    const bool starts_word = at == 0 || std::isalnum(static_cast<unsigned char>(name[at - 1])) == 0;
    if (starts_word && name.substr(at, 4) == "node") {
      std::size_t end = at + 4;
      int node = 0;
      while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])) != 0) {
        node = node * 10 + (name[end] - '0');
        ++end;
      }
      const auto it = renumbered.find(node);
      if (end > at + 4 && end < name.size() && name[end] == '/' && it != renumbered.end()) {
        out += "node" + std::to_string(it->second);
        at = end;
        continue;
      }
    }
    out += name[at++];
  }
  return out;
}

}  // namespace

Cluster Cluster::only_gpu_kind(int index) const {
  (void)gpu_kinds_.at(static_cast<std::size_t>(index));  // std::out_of_range for a kind the cluster lacks
  std::vector<int> nodes;
  for (const DeviceId g : gpus_) {
    if (devices_[g.value].gpu_kind == index) nodes.push_back(devices_[g.value].node);
  }
  std::vector<bool> kept_kinds(gpu_kinds_.size(), false);
  kept_kinds[static_cast<std::size_t>(index)] = true;
  return cut(nodes, kept_kinds);
}

Cluster Cluster::only_nodes(const std::vector<int>& nodes) const {
  return cut(nodes, std::vector<bool>(gpu_kinds_.size(), true));
}

Cluster Cluster::cut(const std::vector<int>& nodes, const std::vector<bool>& kept_kinds) const {
  const auto kind_kept = [&](int kind) { return kind >= 0 && kept_kinds.at(static_cast<std::size_t>(kind)); };
  // The nodes asked for that hold job GPUs of a kept kind, numbered again in their order.
  const std::set<int> asked(nodes.begin(), nodes.end());
  std::map<int, int> renumbered;
  for (const DeviceId g : gpus_) {
    const Device& d = devices_[g.value];
    if (asked.contains(d.node) && kind_kept(d.gpu_kind)) renumbered.emplace(d.node, 0);
  }
  int next = 0;
  for (auto& [old_node, new_node] : renumbered) new_node = next++;

  Cluster out;
  out.name = name;
  out.profile_file = profile_file;
  out.node_count = next;
  std::vector<std::optional<DeviceId>> kept(devices_.size());
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    const bool fabric = d.node < 0;
    if (!fabric && !renumbered.contains(d.node)) continue;
    if (d.kind == DeviceKind::Gpu && !kind_kept(d.gpu_kind)) continue;
    Device copy = d;
    if (!fabric) {
      copy.node = renumbered.at(d.node);
      copy.name = with_nodes_renumbered(d.name, renumbered);
    }
    if (copy.kind == DeviceKind::Gpu) copy.gpu_kind = out.add_gpu_kind(gpu_kinds_[static_cast<std::size_t>(d.gpu_kind)]);
    kept[i] = out.add_device(std::move(copy));
  }
  // add_device made every GPU a job GPU: only those that were stay.
  std::vector<DeviceId> job;
  for (const DeviceId g : gpus_) {
    if (kept[g.value]) job.push_back(*kept[g.value]);
  }
  out.gpus_ = std::move(job);
  std::vector<LinkId> down;
  for (const Link& l : links_) {
    if (!kept[l.a.value] || !kept[l.b.value]) continue;
    Link copy = l;
    copy.a = *kept[l.a.value];
    copy.b = *kept[l.b.value];
    copy.name = with_nodes_renumbered(l.name, renumbered);
    copy.down = false;
    const LinkId id = out.add_link(std::move(copy));
    if (l.down) down.push_back(id);
  }
  for (const LinkId l : down) out.take_link_down(l);
  return out;
}

}  // namespace mpsim::topology
