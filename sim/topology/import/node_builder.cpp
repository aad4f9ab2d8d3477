#include "sim/topology/import/node_builder.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace mpsim::topology::import {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_gpu(std::string_view name) { return starts_with(name, "gpu"); }

/// Written order: NVLink first, then what hangs off the PCIe tree, then the tree itself, then sockets.
int category(LinkKind kind, std::string_view device) {
  switch (kind) {
    case LinkKind::NvLink: return 0;
    case LinkKind::Pcie: return is_gpu(device) || starts_with(device, "nic") ? 1 : 2;
    case LinkKind::Smp: return 3;
    case LinkKind::Net: return 4;
  }
  return 4;
}

}  // namespace

NodeBuilder::NodeBuilder(std::string gpu_kind, int gpus, SpecOrigin origin) {
  node_.gpu_kind = std::move(gpu_kind);
  node_.gpus = gpus;
  node_.origin = std::move(origin);
}

std::string NodeBuilder::gpu(int index) { return fmt::format("gpu{}", index); }
std::string NodeBuilder::add_cpu() { return fmt::format("cpu{}", node_.cpus++); }
std::string NodeBuilder::add_pcie_switch() { return fmt::format("pcie-switch{}", node_.pcie_switches++); }
std::string NodeBuilder::add_nvswitch() { return fmt::format("nvswitch{}", node_.nvswitches++); }
std::string NodeBuilder::add_nic() { return fmt::format("nic{}", node_.nics.count++); }

void NodeBuilder::add_link(LinkKind kind, std::string device, std::string upstream, BytesPerSec bandwidth, int count,
                           SpecOrigin origin) {
  edges_.push_back({kind, std::move(device), std::move(upstream), bandwidth, count, std::move(origin)});
}

void NodeBuilder::connect_cpus(BytesPerSec bandwidth, const SpecOrigin& origin) {
  for (int a = 0; a < node_.cpus; ++a) {
    for (int b = a + 1; b < node_.cpus; ++b) {
      add_link(LinkKind::Smp, fmt::format("cpu{}", a), fmt::format("cpu{}", b), bandwidth, 1, origin);
    }
  }
}

TopologySpec NodeBuilder::finish(std::string name, std::string source, BytesPerSec nic_bandwidth, std::string file) && {
  // The loader's ranges for these counts (topology_loader.cpp, load_node).
  const std::pair<int, int> limits[] = {{node_.gpus, 1024}, {node_.cpus, 64}, {node_.nvswitches, 64},
                                        {node_.pcie_switches, 256}, {node_.nics.count, 256}};
  constexpr std::string_view kWhat[] = {"GPUs", "CPUs", "NVSwitches", "PCIe switches", "NICs"};
  for (std::size_t i = 0; i < std::size(limits); ++i) {
    if (limits[i].first > limits[i].second) {
      throw InputError(node_.origin.where, node_.origin.field,
                       fmt::format("{} {} in one node; a topology file allows at most {}", limits[i].first, kWhat[i],
                                   limits[i].second));
    }
  }
  struct Group {
    int category;
    bool pairs;
    LinkSpec link;
  };
  std::vector<Group> groups;
  for (Edge& e : edges_) {
    const bool pairs = is_gpu(e.device) && is_gpu(e.upstream);
    const auto same = [&](const Group& g) {
      return g.pairs == pairs && g.link.kind == e.kind && g.link.bandwidth == e.bandwidth && g.link.count == e.count &&
             (pairs || g.link.to.front() == e.upstream);
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) {
      Group g{category(e.kind, e.device), pairs, {}};
      g.link.kind = e.kind;
      g.link.bandwidth = e.bandwidth;
      g.link.count = e.count;
      g.link.origin = e.origin;
      if (!pairs) g.link.to.push_back(e.upstream);
      groups.push_back(std::move(g));
      it = std::prev(groups.end());
    }
    if (pairs) {
      it->link.pairs.emplace_back(std::move(e.device), std::move(e.upstream));
    } else {
      it->link.from.push_back(std::move(e.device));
    }
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) { return a.category < b.category; });

  std::vector<std::string> every_gpu;
  for (int g = 0; g < node_.gpus; ++g) every_gpu.push_back(gpu(g));
  for (Group& g : groups) {
    if (node_.gpus > 1 && g.link.from == every_gpu) g.link.from = {"gpu*"};
    node_.links.push_back(std::move(g.link));
  }
  if (node_.nics.count > 0) node_.nics.bandwidth = nic_bandwidth;

  TopologySpec spec;
  spec.name = std::move(name);
  spec.source = std::move(source);
  spec.file = std::move(file);
  const SpecOrigin origin = node_.origin;
  spec.templates.emplace("node", std::move(node_));
  spec.nodes.push_back({"node", 1, origin});
  return spec;
}

const GpuKind& resolve_gpu_kind(std::string_view id, const SourceLocation& where, std::string_view why_needed) {
  const GpuCatalog& catalog = GpuCatalog::builtin();
  const auto known = [&catalog] {
    std::string list;
    for (const auto& n : catalog.names()) list += (list.empty() ? "" : ", ") + n;
    return list;
  };
  if (id.empty()) {
    throw InputError(where, "", fmt::format("{}: give the GPU kind (--gpu KIND, one of {})", why_needed, known()));
  }
  const GpuKind* kind = catalog.find(id);
  if (kind == nullptr) throw InputError(where, "", fmt::format("unknown GPU kind '{}' (one of {})", id, known()));
  return *kind;
}

std::string port_speed_text(BytesPerSec speed) {
  return fmt::format("{:.4g} Gb/s", speed.in_bytes_per_sec() * 8 / 1e9);
}

std::string spec_name(std::string_view source_name, const ImportOptions& options) {
  if (!options.name.empty()) return options.name;
  std::string_view base = source_name;
  if (const auto slash = base.find_last_of("/\\"); slash != std::string_view::npos) base.remove_prefix(slash + 1);
  if (const auto dot = base.find('.'); dot != std::string_view::npos && dot > 0) base = base.substr(0, dot);
  return std::string(base.empty() ? "imported" : base);
}

}  // namespace mpsim::topology::import
