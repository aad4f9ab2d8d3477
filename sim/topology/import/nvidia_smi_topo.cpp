// The semantic half of the nvidia-smi importer: cells → NVLink, CPUs and the PCIe tree.
#include "sim/topology/import/nvidia_smi_topo.h"

#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "sim/topology/import/node_builder.h"
#include "sim/topology/import/nic_choice.h"
#include "sim/topology/import/nvidia_smi_matrix.h"

namespace mpsim::topology::import {
namespace {

/// Disjoint sets whose representative is always the smallest member, so that every grouping
/// below comes out in column order.
class UnionFind {
 public:
  explicit UnionFind(std::size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), std::size_t{0}); }
  std::size_t find(std::size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void unite(std::size_t a, std::size_t b) {
    a = find(a);
    b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }
  /// The sets, each in ascending order, ordered by their smallest member.
  std::vector<std::vector<std::size_t>> sets(const std::vector<std::size_t>& among) {
    std::map<std::size_t, std::vector<std::size_t>> by_root;
    for (const std::size_t x : among) by_root[find(x)].push_back(x);
    std::vector<std::vector<std::size_t>> out;
    for (auto& [root, members] : by_root) out.push_back(std::move(members));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
    return out;
  }

 private:
  std::vector<std::size_t> parent_;
};

/// What a cell says about the PCIe path; NV<n> hides it.
enum class PciePath : std::uint8_t { Unknown, Pix, Pxb, HostBridge, Sys };

PciePath pcie_path(const TopoCell& c) {
  switch (c.entry) {
    case TopoEntry::Self:
    case TopoEntry::NvLink: return PciePath::Unknown;
    case TopoEntry::Pix: return PciePath::Pix;
    case TopoEntry::Pxb: return PciePath::Pxb;
    case TopoEntry::Phb:
    case TopoEntry::Node: return PciePath::HostBridge;
    case TopoEntry::Sys: return PciePath::Sys;
  }
  return PciePath::Unknown;
}

std::vector<std::size_t> all_devices(const TopoMatrix& m) {
  std::vector<std::size_t> out(m.devices.size());
  std::iota(out.begin(), out.end(), std::size_t{0});
  return out;
}

SpecOrigin origin_of(const TopoMatrix& m, const TopoCell& c, std::size_t row, std::size_t column) {
  return {m.where(c), m.field(row, column)};
}

SpecOrigin row_origin(const TopoMatrix& m, std::size_t row) {
  return {{m.source_name, m.devices[row].line, 1}, fmt::format("row {}", m.devices[row].label)};
}

/// NVLink links; returns a sentence for the topology's `source`.
std::string add_nvlinks(const TopoMatrix& m, const GpuKind& kind, NodeBuilder& builder) {
  std::vector<std::size_t> gpu_rows;
  for (std::size_t d = 0; d < m.devices.size(); ++d) {
    if (m.devices[d].kind == TopoDeviceKind::Gpu) gpu_rows.push_back(d);
  }
  const std::size_t g = gpu_rows.size();
  std::vector<int> sum(g, 0);
  std::vector<int> most(g, 0);
  std::vector<std::size_t> most_column(g, 0);
  bool every_pair = g >= 3;
  const TopoCell* first_nv = nullptr;
  std::size_t first_row = 0;
  std::size_t first_column = 0;
  for (std::size_t a = 0; a < g; ++a) {
    for (std::size_t b = 0; b < g; ++b) {
      if (a == b) continue;
      const TopoCell& cell = m.cells[gpu_rows[a]][gpu_rows[b]];
      if (cell.entry != TopoEntry::NvLink) {
        every_pair = false;
        continue;
      }
      if (first_nv == nullptr) {
        first_nv = &cell;
        first_row = gpu_rows[a];
        first_column = gpu_rows[b];
      }
      sum[a] += cell.nvlinks;
      if (cell.nvlinks > most[a]) {
        most[a] = cell.nvlinks;
        most_column[a] = gpu_rows[b];
      }
    }
  }
  if (first_nv == nullptr) return "NVLink: none in the matrix.";
  const int links = kind.nvlink_links;
  if (links == 0) {
    throw InputError(m.where(*first_nv), m.field(first_row, first_column),
                     fmt::format("the matrix shows {}, but GPU kind '{}' has no NVLink: check the GPU kind",
                                 first_nv->text(), kind.id));
  }
  const BytesPerSec per_link = kind.nvlink_bandwidth_per_link;
  // A GPU cannot have more direct NVLinks than ports: counts adding up past that go through switches.
  const bool nvswitch = every_pair && std::all_of(sum.begin(), sum.end(), [links](int s) { return s > links; });
  if (nvswitch) {
    const std::string sw = builder.add_nvswitch();
    for (std::size_t a = 0; a < g; ++a) {
      const TopoCell& cell = m.cells[gpu_rows[a]][most_column[a]];
      if (most[a] > links) {
        throw InputError(m.where(cell), m.field(gpu_rows[a], most_column[a]),
                         fmt::format("{} is more NVLinks than one {} has ({}): check the GPU kind", cell.text(),
                                     kind.id, links));
      }
      builder.add_link(LinkKind::NvLink, NodeBuilder::gpu(static_cast<int>(a)), sw, per_link, most[a],
                       origin_of(m, cell, gpu_rows[a], most_column[a]));
    }
    const int shown = *std::max_element(most.begin(), most.end());
    return fmt::format(
        "NVLink: every GPU pair shows NVLink (up to NV{}), more links in all than one {} has ({}), so the GPUs "
        "meet in one NVSwitch; each GPU links to it with its NV count x {}.",
        shown, kind.id, links, to_string(per_link));
  }
  for (std::size_t a = 0; a < g; ++a) {
    if (sum[a] <= links) continue;
    const TopoCell& cell = m.cells[gpu_rows[a]][most_column[a]];
    throw InputError(m.where(cell), m.field(gpu_rows[a], most_column[a]),
                     fmt::format("{}'s NVLinks add up to {}, more than one {} has ({}): check the GPU kind",
                                 m.devices[gpu_rows[a]].label, sum[a], kind.id, links));
  }
  for (std::size_t a = 0; a < g; ++a) {
    for (std::size_t b = a + 1; b < g; ++b) {
      const TopoCell& cell = m.cells[gpu_rows[a]][gpu_rows[b]];
      if (cell.entry != TopoEntry::NvLink) continue;
      builder.add_link(LinkKind::NvLink, NodeBuilder::gpu(static_cast<int>(a)), NodeBuilder::gpu(static_cast<int>(b)),
                       per_link, cell.nvlinks, origin_of(m, cell, gpu_rows[a], gpu_rows[b]));
    }
  }
  return fmt::format("NVLink: direct links between the GPU pairs that show NV<n>, n x {} each.", to_string(per_link));
}

bool any_sys_between(const TopoMatrix& m, const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  for (const std::size_t x : a) {
    for (const std::size_t y : b) {
      if (pcie_path(m.cells[x][y]) == PciePath::Sys) return true;
    }
  }
  return false;
}

/// The CPU (NUMA node) of every device, numbered in column order of their first device.
std::vector<int> assign_cpus(const TopoMatrix& m) {
  const std::size_t n = m.devices.size();
  UnionFind uf(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = r + 1; c < n; ++c) {
      const PciePath p = pcie_path(m.cells[r][c]);
      if (p == PciePath::Pix || p == PciePath::Pxb || p == PciePath::HostBridge) uf.unite(r, c);
    }
  }
  // The affinity columns are the socket's own word; they also place GPUs whose PCIe path NV<n> hides.
  std::map<std::string, std::size_t> first_with_key;
  for (std::size_t d = 0; d < n; ++d) {
    const std::string& key = m.devices[d].numa_key;
    if (key.empty()) continue;
    const auto [it, fresh] = first_with_key.emplace(key, d);
    if (!fresh) uf.unite(it->second, d);
  }
  // Groups the matrix does not place (no affinity, only NV<n> to the rest) join the first
  // group they are not SYS to; two groups with different affinities stay apart.
  const auto keyed = [&m](const std::vector<std::size_t>& members) {
    return std::any_of(members.begin(), members.end(), [&m](std::size_t d) { return !m.devices[d].numa_key.empty(); });
  };
  auto groups = uf.sets(all_devices(m));
  for (std::size_t i = 1; i < groups.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (groups[j].empty() || (keyed(groups[i]) && keyed(groups[j])) || any_sys_between(m, groups[i], groups[j])) {
        continue;
      }
      groups[j].insert(groups[j].end(), groups[i].begin(), groups[i].end());
      groups[i].clear();
      break;
    }
  }
  std::vector<int> cpu_of(n, -1);
  int cpu = 0;
  for (const auto& members : groups) {
    if (members.empty()) continue;
    for (const std::size_t d : members) cpu_of[d] = cpu;
    ++cpu;
  }
  return cpu_of;
}

/// PCIe switches and links, below the CPUs of `cpu_of`.
void add_pcie(const TopoMatrix& m, const std::vector<int>& cpu_of, const std::vector<std::string>& device_names,
              BytesPerSec bandwidth, NodeBuilder& builder) {
  const std::size_t n = m.devices.size();
  UnionFind pix(n);
  UnionFind pxb(n);
  std::vector<std::size_t> kept;  // devices with a name: every GPU, the NICs nic_choice kept
  for (std::size_t d = 0; d < n; ++d) {
    if (!device_names[d].empty()) kept.push_back(d);
  }
  for (const std::size_t r : kept) {
    for (const std::size_t c : kept) {
      if (c <= r) continue;
      const PciePath p = pcie_path(m.cells[r][c]);
      if (p == PciePath::Pix) pix.unite(r, c);
      if (p == PciePath::Pix || p == PciePath::Pxb) pxb.unite(r, c);
    }
  }
  for (const auto& cluster : pxb.sets(kept)) {
    const std::string cpu = fmt::format("cpu{}", cpu_of[cluster.front()]);
    const SpecOrigin origin = row_origin(m, cluster.front());
    const auto groups = pix.sets(cluster);
    if (groups.size() == 1 && cluster.size() == 1) {
      builder.add_link(LinkKind::Pcie, device_names[cluster.front()], cpu, bandwidth, 1, origin);
      continue;
    }
    std::string parent = cpu;
    if (groups.size() > 1) {  // a switch above the PIX groups, so that PXB routes cross several bridges
      parent = builder.add_pcie_switch();
      builder.add_link(LinkKind::Pcie, parent, cpu, bandwidth, 1, origin);
    }
    for (const auto& group : groups) {
      const std::string leaf = builder.add_pcie_switch();
      builder.add_link(LinkKind::Pcie, leaf, parent, bandwidth, 1, row_origin(m, group.front()));
      for (const std::size_t d : group) {
        builder.add_link(LinkKind::Pcie, device_names[d], leaf, bandwidth, 1, row_origin(m, d));
      }
    }
  }
}

}  // namespace

TopologySpec import_nvidia_smi_topo(std::string_view text, std::string_view source_name, const ImportOptions& options) {
  const TopoMatrix m = parse_topo_matrix(text, source_name);
  const SourceLocation header{m.source_name, m.header_line, 1};
  const GpuKind& kind = resolve_gpu_kind(options.gpu_kind, header, "`nvidia-smi topo -m` does not name the GPU model");
  if (kind.pcie_bandwidth.in_bytes_per_sec() <= 0) {
    throw InputError(header, "", fmt::format("GPU kind '{}' gives no PCIe bandwidth", kind.id));
  }
  NodeBuilder builder(kind.id, m.gpus, {header, "header"});

  std::vector<std::string> device_names(m.devices.size());
  std::string nic_names;
  for (std::size_t d = 0; d < m.devices.size(); ++d) {
    const TopoDevice& dev = m.devices[d];
    if (dev.kind == TopoDeviceKind::Gpu) device_names[d] = NodeBuilder::gpu(dev.index);
  }
  // A NIC shares a PCIe switch with a GPU when the matrix says PIX or PXB between them.
  std::vector<std::size_t> nic_columns;
  std::vector<FoundNic> found;
  for (std::size_t d = 0; d < m.devices.size(); ++d) {
    const TopoDevice& dev = m.devices[d];
    if (dev.kind != TopoDeviceKind::Nic) continue;
    FoundNic nic{dev.label, dev.os_name, false};
    for (std::size_t g = 0; g < m.devices.size(); ++g) {
      const TopoEntry e = m.cells[d][g].entry;
      if (m.devices[g].kind == TopoDeviceKind::Gpu && (e == TopoEntry::Pix || e == TopoEntry::Pxb)) {
        nic.shares_switch_with_gpu = true;
      }
    }
    nic_columns.push_back(d);
    found.push_back(std::move(nic));
  }
  const NicChoice choice = choose_nics(found, options);
  int nic_count = 0;
  for (std::size_t i = 0; i < nic_columns.size(); ++i) {  // NICs are numbered in column order
    if (!choice.keep[i]) continue;
    const std::size_t d = nic_columns[i];
    device_names[d] = builder.add_nic();
    ++nic_count;
    nic_names += fmt::format("{}{} = {}", nic_names.empty() ? "" : ", ", device_names[d], m.devices[d].os_name);
  }

  std::vector<std::string> notes;
  notes.push_back(fmt::format("Imported from `nvidia-smi topo -m` output ({}) for GPU kind {}.", m.source_name, kind.id));
  notes.push_back(add_nvlinks(m, kind, builder));

  const std::vector<int> cpu_of = assign_cpus(m);
  const int cpus = cpu_of.empty() ? 0 : *std::max_element(cpu_of.begin(), cpu_of.end()) + 1;
  for (int c = 0; c < cpus; ++c) (void)builder.add_cpu();
  add_pcie(m, cpu_of, device_names, kind.pcie_bandwidth, builder);
  notes.push_back(fmt::format("PCIe: {} per link ({}'s PCIe gen {} x16).", to_string(kind.pcie_bandwidth), kind.id,
                              kind.pcie_gen));

  const bool smp_given = options.smp_bandwidth.in_bytes_per_sec() > 0;
  const BytesPerSec smp = smp_given ? options.smp_bandwidth : kDefaultSmpBandwidth;
  builder.connect_cpus(smp, {header, "header"});
  if (cpus > 1) {
    notes.push_back(fmt::format("CPUs: {} NUMA nodes, joined pairwise at {}{}.", cpus, to_string(smp),
                                smp_given ? " (given)" : " (default: NCCL's SKL_QPI_BW, NVIDIA/nccl src/graph/topo.h)"));
  }

  const bool nic_given = options.nic_bandwidth.in_bytes_per_sec() > 0;
  const BytesPerSec nic = nic_given ? options.nic_bandwidth : kDefaultNicBandwidth;
  if (nic_count > 0) {
    notes.push_back(fmt::format("NICs: {} each{}; {}.", port_speed_text(nic),
                                nic_given ? " (given)" : " (default: the matrix gives no NIC speed)", nic_names));
  }
  if (!choice.note.empty()) notes.push_back(choice.note);
  notes.push_back("Latencies are not in the input and are left at 0.");

  std::string source;
  for (const auto& note : notes) source += (source.empty() ? "" : " ") + note;
  return std::move(builder).finish(spec_name(source_name, options), std::move(source), nic, m.source_name);
}

}  // namespace mpsim::topology::import
