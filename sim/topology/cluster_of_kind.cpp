// Cluster::only_gpu_kind: the nodes of one GPU kind of a cluster of several, as a cluster of their own.
#include <cctype>
#include <map>
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
  const GpuKind& kind = gpu_kinds_.at(static_cast<std::size_t>(index));
  // The nodes of the kind's job GPUs, numbered again in their order.
  std::map<int, int> renumbered;
  for (const DeviceId g : gpus_) {
    const Device& d = devices_[g.value];
    if (d.gpu_kind == index) renumbered.emplace(d.node, 0);
  }
  int next = 0;
  for (auto& [old_node, new_node] : renumbered) new_node = next++;

  Cluster out;
  out.name = name;
  out.profile_file = profile_file;
  out.node_count = next;
  const int kept_kind = out.add_gpu_kind(kind);
  std::vector<std::optional<DeviceId>> kept(devices_.size());
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    const bool fabric = d.node < 0;
    if (!fabric && !renumbered.contains(d.node)) continue;
    if (d.kind == DeviceKind::Gpu && d.gpu_kind != index) continue;
    Device copy = d;
    if (!fabric) {
      copy.node = renumbered.at(d.node);
      copy.name = with_nodes_renumbered(d.name, renumbered);
    }
    if (copy.kind == DeviceKind::Gpu) copy.gpu_kind = kept_kind;
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
