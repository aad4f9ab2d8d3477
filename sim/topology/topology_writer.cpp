// TopologySpec → YAML. The emitter handles quoting; this file decides layout and unit spelling.
#include "sim/topology/topology_writer.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace mpsim::topology {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;  // base units per one of this unit
};

/// `v` in the largest unit of `ladder` (largest first) that it reaches, when the shortest decimal
/// of the quotient multiplies back to exactly `v` (what the unit parser computes); otherwise in
/// the base unit, whose shortest decimal is exact by construction.
std::string exact_quantity(double v, std::initializer_list<Unit> ladder, std::string_view base_suffix) {
  for (const Unit& u : ladder) {
    if (std::fabs(v) < u.factor) continue;
    const std::string number = fmt::format("{}", v / u.factor);
    double back = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), back);
    if (ec == std::errc() && ptr == number.data() + number.size() && back * u.factor == v) {
      return fmt::format("{} {}", number, u.suffix);
    }
    break;
  }
  return fmt::format("{} {}", v, base_suffix);
}

std::string bandwidth_text(BytesPerSec bw) {
  return exact_quantity(bw.in_bytes_per_sec(), {{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"KB/s", 1e3}},
                        "B/s");
}

/// NIC and network speeds read best in bits ("200 Gb/s") when they are whole gigabits.
std::string port_speed_text(BytesPerSec bw) {
  const double gbit = bw.in_bytes_per_sec() * 8 / 1e9;
  if (gbit >= 1 && gbit == std::floor(gbit) && gbit * (1e9 / 8) == bw.in_bytes_per_sec()) {
    return fmt::format("{} Gb/s", gbit);
  }
  return bandwidth_text(bw);
}

/// Integer nanoseconds, always exact: "2 ms", "0.5 us", "1.234 us".
std::string time_text(TimeNs t) {
  const std::int64_t ns = t.base();
  if (ns != 0 && ns % 1'000'000 == 0) return fmt::format("{} ms", ns / 1'000'000);
  std::string out = fmt::format("{}.{:03}", ns / 1000, ns % 1000);
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return out + " us";
}

std::string bytes_text(Bytes b) {
  constexpr std::int64_t kMiB = std::int64_t{1} << 20;
  constexpr std::int64_t kGiB = std::int64_t{1} << 30;
  const std::int64_t n = b.count();
  if (n != 0 && n % kGiB == 0) return fmt::format("{} GiB", n / kGiB);
  if (n != 0 && n % kMiB == 0) return fmt::format("{} MiB", n / kMiB);
  return fmt::format("{} B", n);
}

std::string flops_rate_text(FlopsPerSec f) {
  return exact_quantity(f.in_flop_per_sec(), {{"PFLOP/s", 1e15}, {"TFLOP/s", 1e12}, {"GFLOP/s", 1e9}}, "FLOP/s");
}

/// Device names are plain words, but patterns (`gpu*`, `gpu[0-3]`) read better quoted, as users write them.
void emit_name(YAML::Emitter& out, const std::string& name) {
  if (name.find_first_of("*[]{},:#") != std::string::npos) {
    out << YAML::DoubleQuoted << name;
  } else {
    out << name;
  }
}

void emit_names(YAML::Emitter& out, const std::vector<std::string>& names) {
  if (names.size() == 1) {
    emit_name(out, names.front());
    return;
  }
  out << YAML::Flow << YAML::BeginSeq;
  for (const auto& n : names) emit_name(out, n);
  out << YAML::EndSeq;
}

void emit_quoted(YAML::Emitter& out, std::string_view key, const std::string& value) {
  out << YAML::Key << std::string(key) << YAML::Value << YAML::DoubleQuoted << value;
}

std::string_view link_kind_word(LinkKind k) {
  switch (k) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::Smp: return "smp";
    case LinkKind::Net: return "net";  // not valid inside a node; written so that the loader names the problem
  }
  return "?";
}

void emit_link(YAML::Emitter& out, const LinkSpec& link) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << std::string(link_kind_word(link.kind));
  if (!link.pairs.empty()) {
    out << YAML::Key << "pairs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& [a, b] : link.pairs) {
      out << YAML::Flow << YAML::BeginSeq;
      emit_name(out, a);
      emit_name(out, b);
      out << YAML::EndSeq;
    }
    out << YAML::EndSeq;
  } else {
    out << YAML::Key << "from" << YAML::Value;
    emit_names(out, link.from);
    out << YAML::Key << "to" << YAML::Value;
    emit_names(out, link.to);
  }
  if (link.count != 1) out << YAML::Key << "count" << YAML::Value << link.count;
  emit_quoted(out, "bandwidth", bandwidth_text(link.bandwidth));
  if (link.latency.base() != 0) emit_quoted(out, "latency", time_text(link.latency));
  if (link.duplex == Duplex::Half) out << YAML::Key << "duplex" << YAML::Value << "half";
  out << YAML::EndMap;
}

void emit_node(YAML::Emitter& out, const NodeSpec& node) {
  out << YAML::BeginMap;
  out << YAML::Key << "gpu" << YAML::Value << node.gpu_kind;
  out << YAML::Key << "gpus" << YAML::Value << node.gpus;
  if (node.cpus > 0) out << YAML::Key << "cpus" << YAML::Value << node.cpus;
  if (node.nvswitches > 0) out << YAML::Key << "nvswitches" << YAML::Value << node.nvswitches;
  if (node.pcie_switches > 0) out << YAML::Key << "pcie_switches" << YAML::Value << node.pcie_switches;
  if (node.nics.count > 0) {
    out << YAML::Key << "nics" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "count" << YAML::Value << node.nics.count;
    emit_quoted(out, "bandwidth", port_speed_text(node.nics.bandwidth));
    if (node.nics.latency.base() != 0) emit_quoted(out, "latency", time_text(node.nics.latency));
    out << YAML::EndMap;
  }
  if (!node.links.empty()) {
    out << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
    for (const LinkSpec& link : node.links) emit_link(out, link);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

void emit_gpu_kind(YAML::Emitter& out, const GpuKind& kind) {
  out << YAML::Key << kind.id << YAML::Value << YAML::BeginMap;
  if (!kind.name.empty() && kind.name != kind.id) out << YAML::Key << "name" << YAML::Value << kind.name;
  out << YAML::Key << "peak" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& [dtype, rate] : kind.peak) emit_quoted(out, to_string(dtype), flops_rate_text(rate));
  out << YAML::EndMap;
  emit_quoted(out, "memory", bytes_text(kind.memory));
  emit_quoted(out, "memory_bandwidth", bandwidth_text(kind.memory_bandwidth));
  if (kind.nvlink_links > 0) {
    out << YAML::Key << "nvlink" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "links" << YAML::Value << kind.nvlink_links;
    emit_quoted(out, "bandwidth_per_link", bandwidth_text(kind.nvlink_bandwidth_per_link));
    out << YAML::EndMap;
  }
  if (kind.pcie_gen > 0) {
    out << YAML::Key << "pcie" << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "gen" << YAML::Value << kind.pcie_gen;
    emit_quoted(out, "bandwidth", bandwidth_text(kind.pcie_bandwidth));
    out << YAML::EndMap;
  }
  if (kind.matmul_efficiency != 1.0) {
    out << YAML::Key << "matmul_efficiency" << YAML::Value << fmt::format("{}", kind.matmul_efficiency);
  }
  // Written where they differ from matmul_efficiency, their default when read back.
  if (kind.fp8_matmul_efficiency != kind.matmul_efficiency) {
    out << YAML::Key << "fp8_matmul_efficiency" << YAML::Value << fmt::format("{}", kind.fp8_matmul_efficiency);
  }
  if (kind.attention_efficiency != kind.matmul_efficiency) {
    out << YAML::Key << "attention_efficiency" << YAML::Value << fmt::format("{}", kind.attention_efficiency);
  }
  if (!kind.attention_kernels.empty()) {
    out << YAML::Key << "attention_kernels" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [generation, efficiency] : kind.attention_kernels) {
      out << YAML::Key << std::string(to_string(generation)) << YAML::Value << fmt::format("{}", efficiency);
    }
    out << YAML::EndMap;
  }
  if (kind.sm_count > 0) out << YAML::Key << "sms" << YAML::Value << kind.sm_count;
  if (!kind.source.empty()) out << YAML::Key << "source" << YAML::Value << kind.source;
  out << YAML::EndMap;
}

void emit_fabric(YAML::Emitter& out, const FabricSpec& fabric) {
  out << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << std::string(to_string(fabric.kind));
  out << YAML::Key << "network" << YAML::Value << fabric.network;
  const int default_levels = fabric.kind == FabricKind::SingleSwitch ? 1 : 2;
  if (fabric.levels != default_levels) out << YAML::Key << "levels" << YAML::Value << fabric.levels;
  if (fabric.leaf_ports > 0) out << YAML::Key << "leaf_ports" << YAML::Value << fabric.leaf_ports;
  if (fabric.pod_leaves > 0) out << YAML::Key << "pod_leaves" << YAML::Value << fabric.pod_leaves;
  if (fabric.oversubscription != 1.0) {
    out << YAML::Key << "oversubscription" << YAML::Value << fmt::format("{}", fabric.oversubscription);
  }
  if (fabric.switch_latency.base() != 0) emit_quoted(out, "switch_latency", time_text(fabric.switch_latency));
  out << YAML::EndMap;
}

/// "8 GPUs (a100-80gb), 1 NVSwitch, 4 PCIe switches, 2 CPUs, 8 NICs"
std::string node_summary(const NodeSpec& node) {
  std::string out = fmt::format("{} GPU{} ({})", node.gpus, node.gpus == 1 ? "" : "s", node.gpu_kind);
  const auto add = [&out](int n, std::string_view one, std::string_view many) {
    if (n > 0) out += fmt::format(", {} {}", n, n == 1 ? one : many);
  };
  add(node.nvswitches, "NVSwitch", "NVSwitches");
  add(node.pcie_switches, "PCIe switch", "PCIe switches");
  add(node.cpus, "CPU", "CPUs");
  add(node.nics.count, "NIC", "NICs");
  return out;
}

std::string header(const TopologySpec& spec, bool single_template) {
  std::string out = fmt::format("# {}: mpsim topology, full form (docs/formats.md, Full form).\n",
                                spec.name.empty() ? std::string("unnamed cluster") : spec.name);
  if (single_template) {
    const NodeSpec& node = spec.templates.begin()->second;
    const int count = spec.nodes.front().count;
    out += fmt::format("# {} node{}: {} each.\n", count, count == 1 ? "" : "s", node_summary(node));
  } else {
    for (const NodeGroup& g : spec.nodes) {
      const auto it = spec.templates.find(g.template_name);
      if (it == spec.templates.end()) continue;
      out += fmt::format("# {} x '{}': {} each.\n", g.count, g.template_name, node_summary(it->second));
    }
  }
  return out;
}

}  // namespace

std::string write_topology_yaml(const TopologySpec& spec) {
  const bool single_template = spec.templates.size() == 1 && spec.nodes.size() == 1 &&
                               spec.templates.begin()->first == "node" && spec.nodes.front().template_name == "node";
  YAML::Emitter out;
  out.SetIndent(2);
  out << YAML::BeginMap;
  if (!spec.name.empty()) out << YAML::Key << "name" << YAML::Value << spec.name;
  if (!spec.source.empty()) {
    out << YAML::Key << "source" << YAML::Value;
    if (spec.source.find('\n') != std::string::npos) out << YAML::Literal;
    out << spec.source;
  }
  if (!spec.custom_gpu_kinds.empty()) {
    out << YAML::Key << "gpu_kinds" << YAML::Value << YAML::BeginMap;
    for (const GpuKind& kind : spec.custom_gpu_kinds) emit_gpu_kind(out, kind);
    out << YAML::EndMap;
  }
  if (single_template) {
    out << YAML::Key << "node" << YAML::Value;
    emit_node(out, spec.templates.begin()->second);
    out << YAML::Key << "nodes" << YAML::Value << spec.nodes.front().count;
  } else {
    out << YAML::Key << "node_templates" << YAML::Value << YAML::BeginMap;
    for (const auto& [name, node] : spec.templates) {
      out << YAML::Key << name << YAML::Value;
      emit_node(out, node);
    }
    out << YAML::EndMap;
    out << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
    for (const NodeGroup& g : spec.nodes) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "template" << YAML::Value << g.template_name << YAML::Key
          << "count" << YAML::Value << g.count << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  if (spec.fabric) {
    out << YAML::Key << "fabric" << YAML::Value;
    emit_fabric(out, *spec.fabric);
  }
  out << YAML::EndMap;
  return header(spec, single_template) + out.c_str() + "\n";
}

}  // namespace mpsim::topology
