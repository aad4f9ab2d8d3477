// NCCL topology XML → devices found in the tree → one node of links.
#include "sim/topology/import/nccl_xml.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "sim/core/ascii_case.h"
#include "sim/topology/import/nccl_model.h"
#include "sim/topology/import/nic_choice.h"
#include "sim/topology/import/node_builder.h"
#include "sim/topology/import/xml_reader.h"

namespace mpsim::topology::import {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

/// Built-in kinds by CUDA compute capability (NCCL's `sm`). configs/hardware/gpus.yaml does not
/// record it, so this is the one place that maps the two; extend it with the catalog.
struct KindsOfSm {
  int sm;
  std::vector<std::string_view> kinds;
};
const std::vector<KindsOfSm>& kinds_by_sm() {
  static const std::vector<KindsOfSm> table = {
      {70, {"v100-16gb", "v100-32gb"}}, {80, {"a100-40gb", "a100-80gb"}}, {90, {"h100-sxm", "h200"}}, {100, {"b200"}}};
  return table;
}

/// NCCL's tclass for the CPU end of an NVLink (POWER9, Grace): kvDictPciClass "0x068001".
constexpr std::string_view kCpuNvLinkClass = "0x068001";

struct Found {
  enum class Kind : std::uint8_t { Cpu, Switch, Gpu, Nic };
  Kind kind = Kind::Cpu;
  std::size_t parent = kNone;
  BytesPerSec uplink;
  SpecOrigin origin;
  bool keep = true;
  std::optional<int> dev;  // GPU: <gpu dev>; NIC: <net dev>
  // GPU
  const XmlElement* gpu = nullptr;
  std::string gpu_path;
  std::string busid;
  int sm = 0;
  // NIC
  BytesPerSec speed;
  std::string net_name;
  // CPU
  CpuModel cpu;
};

class XmlImporter {
 public:
  XmlImporter(std::string_view source_name, const ImportOptions& options)
      : source_(source_name), options_(options) {}

  TopologySpec run(const XmlElement& root) {
    if (root.name != "system") {
      fail(root.line, root.column, "",
           fmt::format("not an NCCL topology file: the root element is <{}>, expected <system>", root.name));
    }
    std::set<std::string> hosts;
    for_each_child(root, "system", [&](const XmlElement& c, const std::string& path) {
      if (c.name != "cpu") return;
      if (const XmlAttribute* h = c.attribute("host_hash")) hosts.insert(h->value);
      if (hosts.size() > 1) fail_at(c, path, "the file describes several hosts (host_hash); import one node at a time");
      walk_cpu(c, path);
    });
    prune_empty_switches();
    return build(root);
  }

 private:
  [[noreturn]] void fail(int line, int column, const std::string& field, const std::string& message) const {
    throw InputError({std::string(source_), line, column}, field, message);
  }
  [[noreturn]] void fail_at(const XmlElement& e, const std::string& path, const std::string& message) const {
    fail(e.line, e.column, path, message);
  }
  [[noreturn]] void fail_at(const XmlAttribute& a, const std::string& path, const std::string& message) const {
    fail(a.line, a.column, fmt::format("{}/@{}", path, a.name), message);
  }

  template <typename Fn>
  static void for_each_child(const XmlElement& e, const std::string& path, Fn&& fn) {
    std::map<std::string, int> seen;
    for (const XmlElement& c : e.children) fn(c, fmt::format("{}/{}[{}]", path, c.name, seen[c.name]++));
  }

  const XmlAttribute& required(const XmlElement& e, const std::string& path, std::string_view name) const {
    const XmlAttribute* a = e.attribute(name);
    if (a == nullptr) fail_at(e, path, fmt::format("<{}> needs the attribute '{}'", e.name, name));
    return *a;
  }

  /// An integer attribute, decimal or 0x-hex as NCCL's strtol(..., 0) reads it; nothing when absent.
  std::optional<long long> int_attr(const XmlElement& e, const std::string& path, std::string_view name) const {
    const XmlAttribute* a = e.attribute(name);
    if (a == nullptr) return std::nullopt;
    std::string_view v = a->value;
    const bool negative = !v.empty() && v.front() == '-';
    if (negative) v.remove_prefix(1);
    int base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
      v.remove_prefix(2);
      base = 16;
    }
    long long out = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
      fail_at(*a, path, fmt::format("'{}' is not an integer", a->value));
    }
    return negative ? -out : out;
  }

  int int_in(const XmlElement& e, const std::string& path, std::string_view name, long long lo, long long hi) const {
    const auto v = int_attr(e, path, name);
    if (!v) fail_at(e, path, fmt::format("<{}> needs the attribute '{}'", e.name, name));
    if (*v < lo || *v > hi) fail_at(*e.attribute(name), path, fmt::format("must be between {} and {}", lo, hi));
    return static_cast<int>(*v);
  }

  SpecOrigin origin(const XmlElement& e, const std::string& path) const {
    return {{std::string(source_), e.line, e.column}, path};
  }

  std::size_t add(Found f) {
    found_.push_back(std::move(f));
    return found_.size() - 1;
  }

  void walk_cpu(const XmlElement& e, const std::string& path) {
    Found cpu;
    cpu.kind = Found::Kind::Cpu;
    cpu.origin = origin(e, path);
    if (const auto* a = e.attribute("arch")) cpu.cpu.arch = a->value;
    if (const auto* a = e.attribute("vendor")) cpu.cpu.vendor = a->value;
    cpu.cpu.family = static_cast<int>(int_attr(e, path, "familyid").value_or(-1));
    cpu.cpu.model = static_cast<int>(int_attr(e, path, "modelid").value_or(-1));
    const std::size_t index = add(std::move(cpu));
    for_each_child(e, path, [&](const XmlElement& c, const std::string& child_path) {
      if (c.name == "pci") walk_pci(c, index, child_path);
      if (c.name == "nic") add_nets(c, index, std::nullopt, child_path);
    });
  }

  void walk_pci(const XmlElement& e, std::size_t parent, const std::string& path) {
    const std::string pci_class = ascii_lower(required(e, path, "class").value);
    const XmlAttribute* speed = e.attribute("link_speed");
    const int width = static_cast<int>(std::clamp(int_attr(e, path, "link_width").value_or(0), 0LL, 64LL));
    const PcieLink link = pcie_link(speed != nullptr ? std::string_view(speed->value) : std::string_view(), width);
    if (!link.speed_known && speed != nullptr && !speed->value.empty()) unknown_speeds_.insert(speed->value);
    if (e.has_child("gpu")) {
      Found gpu;
      gpu.kind = Found::Kind::Gpu;
      gpu.parent = parent;
      gpu.uplink = link.bandwidth;
      gpu.origin = origin(e, path);
      gpu.busid = ascii_lower(required(e, path, "busid").value);
      for_each_child(e, path, [&](const XmlElement& c, const std::string& child_path) {
        if (c.name != "gpu" || gpu.gpu != nullptr) return;
        gpu.gpu = &c;
        gpu.gpu_path = child_path;
        gpu.sm = int_in(c, child_path, "sm", 10, 10000);
        if (const auto dev = int_attr(c, child_path, "dev")) gpu.dev = static_cast<int>(*dev);
      });
      add(std::move(gpu));
      return;
    }
    if (e.has_child("nic")) {
      for_each_child(e, path, [&](const XmlElement& c, const std::string& child_path) {
        if (c.name == "nic") add_nets(c, parent, link.bandwidth, child_path);
      });
      return;
    }
    // NVSwitch and CPU-bridge functions (0x0680..) carry no PCIe traffic of ours.
    if (pci_class.rfind("0x0680", 0) == 0) return;
    Found sw;
    sw.kind = Found::Kind::Switch;
    sw.parent = parent;
    sw.uplink = link.bandwidth;
    sw.origin = origin(e, path);
    const std::size_t index = add(std::move(sw));
    for_each_child(e, path, [&](const XmlElement& c, const std::string& child_path) {
      if (c.name == "pci") walk_pci(c, index, child_path);
    });
  }

  /// One NIC per <net>; `uplink` is the PCIe link of the enclosing <pci>, if any.
  void add_nets(const XmlElement& nic, std::size_t parent, std::optional<BytesPerSec> uplink, const std::string& path) {
    for_each_child(nic, path, [&](const XmlElement& net, const std::string& net_path) {
      if (net.name != "net") return;
      Found f;
      f.kind = Found::Kind::Nic;
      f.parent = parent;
      f.origin = origin(net, net_path);
      long long mbps = int_attr(net, net_path, "speed").value_or(0);
      if (mbps <= 0) mbps = 10000;  // NCCL's value for NICs that report no speed (ncclTopoAddNet)
      f.speed = BytesPerSec::gigabits_per_sec(static_cast<double>(mbps) / 1000.0);
      f.uplink = uplink.value_or(f.speed);
      if (const auto dev = int_attr(net, net_path, "dev")) f.dev = static_cast<int>(*dev);
      if (const auto* name = net.attribute("name")) f.net_name = name->value;
      add(std::move(f));
    });
  }

  /// Switches with no GPU or NIC below them (NVMe bridges, empty slots) are left out.
  void prune_empty_switches() {
    std::vector<bool> used(found_.size(), false);
    for (std::size_t i = 0; i < found_.size(); ++i) {
      if ((found_[i].kind != Found::Kind::Gpu && found_[i].kind != Found::Kind::Nic) || !found_[i].keep) continue;
      for (std::size_t p = found_[i].parent; p != kNone && !used[p]; p = found_[p].parent) used[p] = true;
    }
    for (std::size_t i = 0; i < found_.size(); ++i) {
      if (found_[i].kind == Found::Kind::Switch) found_[i].keep = used[i];
    }
  }

  std::vector<std::size_t> of_kind(Found::Kind kind) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < found_.size(); ++i) {
      if (found_[i].kind == kind && found_[i].keep) out.push_back(i);
    }
    return out;
  }

  /// By `dev` when those are exactly 0..n-1 (CUDA/NCCL device order), else in file order.
  /// The PCIe switches above `i`.
  std::set<std::size_t> switches_above(std::size_t i) const {
    std::set<std::size_t> out;
    for (std::size_t p = found_[i].parent; p != kNone; p = found_[p].parent) {
      if (found_[p].kind == Found::Kind::Switch) out.insert(p);
    }
    return out;
  }

  /// Leaves out the NICs that are not training rails (nic_choice.h), and the switches only they used.
  NicChoice choose_training_nics(const std::vector<std::size_t>& gpus) {
    std::vector<std::size_t> nics = of_kind(Found::Kind::Nic);
    std::vector<FoundNic> found;
    // Sharing a switch at any level is NCCL's PIX or PXB: the path stays below the host bridge.
    std::set<std::size_t> above_gpus;
    for (const std::size_t g : gpus) above_gpus.merge(switches_above(g));
    for (const std::size_t n : nics) {
      const std::set<std::size_t> above = switches_above(n);
      const bool shares = std::any_of(above.begin(), above.end(), [&](std::size_t s) { return above_gpus.contains(s); });
      found.push_back({found_[n].net_name, found_[n].net_name, shares});
    }
    NicChoice choice = choose_nics(found, options_);
    for (std::size_t i = 0; i < nics.size(); ++i) found_[nics[i]].keep = choice.keep[i];
    prune_empty_switches();
    return choice;
  }

  std::vector<std::size_t> numbered(std::vector<std::size_t> items) const {
    std::vector<bool> seen(items.size(), false);
    for (const std::size_t i : items) {
      const auto dev = found_[i].dev;
      if (!dev || *dev < 0 || static_cast<std::size_t>(*dev) >= items.size() || seen[static_cast<std::size_t>(*dev)]) {
        return items;
      }
      seen[static_cast<std::size_t>(*dev)] = true;
    }
    std::sort(items.begin(), items.end(), [this](std::size_t a, std::size_t b) { return *found_[a].dev < *found_[b].dev; });
    return items;
  }

  const GpuKind& gpu_kind(const std::vector<std::size_t>& gpus, std::string& note) const {
    const Found& first = found_[gpus.front()];
    for (const std::size_t g : gpus) {
      if (found_[g].sm != first.sm) {
        fail_at(*found_[g].gpu->attribute("sm"), found_[g].gpu_path,
                fmt::format("GPUs of different models in one node (sm {} and {}) are not supported", first.sm,
                            found_[g].sm));
      }
    }
    const SourceLocation where{std::string(source_), first.gpu->line, first.gpu->column};
    if (!options_.gpu_kind.empty()) {
      note = "given";
      return resolve_gpu_kind(options_.gpu_kind, where, "");
    }
    for (const KindsOfSm& k : kinds_by_sm()) {
      if (k.sm != first.sm) continue;
      if (k.kinds.size() == 1) {
        note = fmt::format("the only built-in kind with sm {}", first.sm);
        return resolve_gpu_kind(k.kinds.front(), where, "");
      }
      std::string list;
      for (const auto id : k.kinds) list += fmt::format("{}{}", list.empty() ? "" : ", ", id);
      throw InputError(where, first.gpu_path + "/@sm",
                       fmt::format("sm {} fits several GPU kinds ({}), and the file does not say which: give the GPU "
                                   "kind (--gpu KIND)",
                                   first.sm, list));
    }
    return resolve_gpu_kind("", where, fmt::format("no built-in GPU kind has sm {}", first.sm));
  }

  /// NVLink links; returns a sentence for the topology's `source`.
  std::string add_nvlinks(const std::vector<std::size_t>& gpus, const GpuKind& kind, NodeBuilder& builder) {
    std::map<std::string, int> index_of_busid;
    for (std::size_t g = 0; g < gpus.size(); ++g) index_of_busid[found_[gpus[g]].busid] = static_cast<int>(g);
    std::vector<int> to_switch(gpus.size(), 0);
    std::vector<SpecOrigin> switch_origin(gpus.size());
    std::map<std::pair<int, int>, std::pair<int, SpecOrigin>> direct;  // (a < b) -> count, where
    std::vector<int> total(gpus.size(), 0);
    int dropped = 0;
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      const Found& gpu = found_[gpus[g]];
      for_each_child(*gpu.gpu, gpu.gpu_path, [&](const XmlElement& nv, const std::string& path) {
        if (nv.name != "nvlink") return;
        const int count = int_in(nv, path, "count", 1, 64);
        const std::string tclass = ascii_lower(required(nv, path, "tclass").value);
        if (tclass.rfind("0x03", 0) == 0) {  // another GPU
          const auto it = index_of_busid.find(ascii_lower(required(nv, path, "target").value));
          if (it == index_of_busid.end()) {
            dropped += count;
            return;
          }
          const int a = std::min(static_cast<int>(g), it->second);
          const int b = std::max(static_cast<int>(g), it->second);
          direct.try_emplace({a, b}, count, origin(nv, path));  // both ends list the link: keep one
          total[g] += count;
        } else if (tclass == kCpuNvLinkClass) {
          dropped += count;
        } else {  // NVSwitch (0x068000) or anything else NCCL also folds into its one NVS node
          if (to_switch[g] == 0) switch_origin[g] = origin(nv, path);
          to_switch[g] += count;
          total[g] += count;
        }
      });
    }
    const bool any = !direct.empty() || std::any_of(to_switch.begin(), to_switch.end(), [](int c) { return c > 0; });
    if (!any) return "NVLink: none in the file.";
    for (std::size_t g = 0; g < gpus.size(); ++g) {
      if (total[g] <= kind.nvlink_links) continue;
      const Found& gpu = found_[gpus[g]];
      fail_at(*gpu.gpu, gpu.gpu_path,
              fmt::format("this GPU lists {} NVLinks, more than one {} has ({}): check the GPU kind", total[g], kind.id,
                          kind.nvlink_links));
    }
    const BytesPerSec per_link = kind.nvlink_bandwidth_per_link;
    std::string note;
    if (std::any_of(to_switch.begin(), to_switch.end(), [](int c) { return c > 0; })) {
      const std::string sw = builder.add_nvswitch();
      for (std::size_t g = 0; g < gpus.size(); ++g) {
        if (to_switch[g] == 0) continue;
        builder.add_link(LinkKind::NvLink, NodeBuilder::gpu(static_cast<int>(g)), sw, per_link, to_switch[g],
                         switch_origin[g]);
      }
      note = fmt::format(
          "NVLink: the NVSwitch chips are one switch; each GPU links to it with its NVLink count summed over them "
          "(up to {}) x {}.",
          *std::max_element(to_switch.begin(), to_switch.end()), to_string(per_link));
    }
    for (const auto& [pair, link] : direct) {
      builder.add_link(LinkKind::NvLink, NodeBuilder::gpu(pair.first), NodeBuilder::gpu(pair.second), per_link,
                       link.first, link.second);
    }
    if (!direct.empty()) {
      note += fmt::format("{}NVLink: direct GPU-to-GPU links of count x {}.", note.empty() ? "" : " ",
                          to_string(per_link));
    }
    if (dropped > 0) {
      note += fmt::format(" {} NVLinks to CPUs or to GPUs not in the file are left out.", dropped);
    }
    return note;
  }

  TopologySpec build(const XmlElement& root) {
    const auto cpus = of_kind(Found::Kind::Cpu);
    const auto gpus = numbered(of_kind(Found::Kind::Gpu));
    const NicChoice choice = choose_training_nics(gpus);
    const auto nics = numbered(of_kind(Found::Kind::Nic));
    if (cpus.empty()) fail_at(root, "system", "no <cpu> element: this file describes no machine");
    if (gpus.empty()) fail_at(root, "system", "no <pci> element with a <gpu> in it: there are no GPUs to import");
    std::string kind_note;
    const GpuKind& kind = gpu_kind(gpus, kind_note);

    NodeBuilder builder(kind.id, static_cast<int>(gpus.size()), origin(root, "system"));
    std::vector<std::string> name(found_.size());
    for (const std::size_t c : cpus) name[c] = builder.add_cpu();
    for (const std::size_t s : of_kind(Found::Kind::Switch)) name[s] = builder.add_pcie_switch();
    for (std::size_t g = 0; g < gpus.size(); ++g) name[gpus[g]] = NodeBuilder::gpu(static_cast<int>(g));
    std::string nic_names;
    BytesPerSec fastest;
    std::set<double> speeds;
    for (const std::size_t n : nics) {
      name[n] = builder.add_nic();
      nic_names += fmt::format("{}{} = {}", nic_names.empty() ? "" : ", ", name[n], found_[n].net_name);
      fastest = std::max(fastest, found_[n].speed);
      speeds.insert(found_[n].speed.in_bytes_per_sec());
    }

    std::vector<std::string> notes;
    notes.push_back(fmt::format("Imported from NCCL topology XML ({}) for GPU kind {} ({}).", source_, kind.id,
                                kind_note));
    notes.push_back(add_nvlinks(gpus, kind, builder));

    for (std::size_t i = 0; i < found_.size(); ++i) {
      const Found& f = found_[i];
      if (f.kind == Found::Kind::Cpu || !f.keep) continue;
      builder.add_link(LinkKind::Pcie, name[i], name[f.parent], f.uplink, 1, f.origin);
    }
    notes.push_back("PCIe: link_speed x link_width at raw per-direction rates (Gen4 x16 = 31 GB/s).");
    if (!unknown_speeds_.empty()) {
      std::string list;
      for (const auto& s : unknown_speeds_) list += fmt::format("{}'{}'", list.empty() ? "" : ", ", s);
      notes.push_back(fmt::format("Unknown link_speed {} read as 8 GT/s, as NCCL does.", list));
    }

    const bool smp_given = options_.smp_bandwidth.in_bytes_per_sec() > 0;
    const InterCpuBandwidth model = inter_cpu_bandwidth(found_[cpus.front()].cpu);
    const BytesPerSec smp = smp_given ? options_.smp_bandwidth : model.bandwidth;
    builder.connect_cpus(smp, origin(root, "system"));
    if (cpus.size() > 1) {
      const Found& cpu = found_[cpus.front()];
      notes.push_back(smp_given ? fmt::format("CPUs: {}, joined pairwise at {} (given).", cpus.size(), to_string(smp))
                                : fmt::format("CPUs: {}, joined pairwise at {} (NCCL's {} for {} {} family {}).",
                                              cpus.size(), to_string(smp), model.nccl_name, cpu.cpu.arch,
                                              cpu.cpu.vendor, cpu.cpu.family));
    }

    const bool nic_given = options_.nic_bandwidth.in_bytes_per_sec() > 0;
    const BytesPerSec nic = nic_given ? options_.nic_bandwidth : fastest;
    if (!nics.empty()) {
      notes.push_back(fmt::format("NICs: {} each ({}); {}.", port_speed_text(nic),
                                  nic_given               ? "given"
                                  : speeds.size() == 1    ? "<net speed>"
                                                          : "the fastest <net speed>; the file lists several",
                                  nic_names));
    }
    if (!choice.note.empty()) notes.push_back(choice.note);
    notes.push_back("Latencies are not in the input and are left at 0.");
    std::string source;
    for (const auto& n : notes) source += (source.empty() ? "" : " ") + n;
    return std::move(builder).finish(spec_name(source_, options_), std::move(source), nic, std::string(source_));
  }

  std::string_view source_;
  const ImportOptions& options_;
  std::vector<Found> found_;
  std::set<std::string> unknown_speeds_;
};

}  // namespace

TopologySpec import_nccl_xml(std::string_view text, std::string_view source_name, const ImportOptions& options) {
  const XmlElement root = parse_xml(text, source_name);
  return XmlImporter(source_name, options).run(root);
}

}  // namespace mpsim::topology::import
