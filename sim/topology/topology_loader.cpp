#include "sim/topology/topology_loader.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "sim/core/input_kind.h"
#include "sim/core/yaml_field.h"

namespace mpsim::topology {
namespace {

SpecOrigin origin_of(const Field& f) { return {f.location(), f.path()}; }

/// The GPU kind a node names: an inline mapping (added to the spec's kinds) or a known id.
std::string read_gpu_kind(const Field& gpu, const std::string& inline_id, TopologySpec& spec) {
  if (gpu.is_map()) {
    spec.custom_gpu_kinds.push_back(load_gpu_kind(gpu, inline_id));
    return inline_id;
  }
  std::string id = gpu.as_string();
  if (find_gpu_kind(spec, id) == nullptr) {
    gpu.fail(fmt::format("unknown GPU kind '{}' (known: {})", id, known_gpu_kinds(spec)));
  }
  return id;
}

constexpr std::pair<std::string_view, LinkKind> kLinkKinds[] = {
    {"nvlink", LinkKind::NvLink}, {"nvswitch", LinkKind::NvLink}, {"pcie", LinkKind::Pcie},
    {"smp", LinkKind::Smp},       {"net", LinkKind::Net}};
constexpr std::pair<std::string_view, Duplex> kDuplex[] = {{"full", Duplex::Full}, {"half", Duplex::Half}};
constexpr std::pair<std::string_view, FabricKind> kFabricKinds[] = {
    {"single-switch", FabricKind::SingleSwitch}, {"fat-tree", FabricKind::FatTree},
    {"rail-optimized", FabricKind::RailOptimized}};
constexpr std::pair<std::string_view, std::string_view> kNetworks[] = {
    {"infiniband", "infiniband"}, {"ethernet", "ethernet"}, {"roce", "roce"}, {"efa", "efa"}};

std::vector<std::string> names_of(const Field& f) {
  std::vector<std::string> out;
  for (const Field& item : f.items_or_scalar()) out.push_back(item.as_string());
  if (out.empty()) f.fail("expected at least one device name");
  return out;
}

LinkSpec load_link(const Field& f) {
  f.expect_keys({"kind", "from", "to", "pairs", "bandwidth", "count", "latency", "duplex"});
  LinkSpec link;
  link.origin = origin_of(f);
  link.kind = f.require("kind").as_enum(kLinkKinds);
  if (link.kind == LinkKind::Net) f.require("kind").fail("network links are built by 'fabric', not listed in a node");
  const bool has_pairs = f.has("pairs");
  if (has_pairs == (f.has("from") || f.has("to"))) {
    f.fail("give either 'from' and 'to', or 'pairs'");
  }
  if (has_pairs) {
    for (const Field& pair : f.require("pairs").items()) {
      const auto ends = pair.items();
      if (ends.size() != 2) pair.fail("a pair is a list of two device names");
      link.pairs.emplace_back(ends[0].as_string(), ends[1].as_string());
    }
  } else {
    link.from = names_of(f.require("from"));
    link.to = names_of(f.require("to"));
  }
  link.bandwidth = f.require("bandwidth").as_bandwidth();
  if (auto c = f.get("count")) link.count = static_cast<int>(c->as_int_in(1, 64));
  if (auto l = f.get("latency")) link.latency = l->as_time();
  if (auto d = f.get("duplex")) link.duplex = d->as_enum(kDuplex);
  return link;
}

NodeSpec load_node(const Field& f, const std::string& template_name, TopologySpec& spec) {
  f.expect_keys({"gpu", "gpus", "cpus", "nvswitches", "pcie_switches", "nics", "links"});
  NodeSpec node;
  node.origin = origin_of(f);
  node.gpu_kind = read_gpu_kind(f.require("gpu"), "custom-" + template_name, spec);
  node.gpus = static_cast<int>(f.require("gpus").as_int_in(1, 1024));
  if (auto v = f.get("cpus")) node.cpus = static_cast<int>(v->as_int_in(0, 64));
  if (auto v = f.get("nvswitches")) node.nvswitches = static_cast<int>(v->as_int_in(0, 64));
  if (auto v = f.get("pcie_switches")) node.pcie_switches = static_cast<int>(v->as_int_in(0, 256));
  if (auto nics = f.get("nics")) {
    nics->expect_keys({"count", "bandwidth", "latency"});
    node.nics.count = static_cast<int>(nics->require("count").as_int_in(0, 256));
    node.nics.bandwidth = nics->require("bandwidth").as_bandwidth();
    if (auto l = nics->get("latency")) node.nics.latency = l->as_time();
  }
  if (auto links = f.get("links")) {
    for (const Field& l : links->items()) node.links.push_back(load_link(l));
  }
  return node;
}

FabricSpec load_fabric(const Field& f) {
  f.expect_keys({"kind", "network", "levels", "leaf_ports", "pod_leaves", "oversubscription", "switch_latency"});
  FabricSpec fabric;
  fabric.origin = origin_of(f);
  fabric.kind = f.require("kind").as_enum(kFabricKinds);
  if (auto n = f.get("network")) fabric.network = std::string(n->as_enum(kNetworks));
  fabric.levels = fabric.kind == FabricKind::SingleSwitch ? 1 : 2;
  if (auto l = f.get("levels")) {
    fabric.levels = static_cast<int>(l->as_int_in(1, 3));
    if (fabric.kind == FabricKind::SingleSwitch && fabric.levels != 1) l->fail("a single switch has one level");
    if (fabric.kind == FabricKind::RailOptimized && fabric.levels < 2) {
      l->fail("rails need a spine level to talk across rails: levels must be 2 or 3");
    }
  }
  if (auto p = f.get("leaf_ports")) fabric.leaf_ports = static_cast<int>(p->as_int_in(1, 100000));
  if (auto p = f.get("pod_leaves")) fabric.pod_leaves = static_cast<int>(p->as_int_in(1, 100000));
  if (fabric.levels == 3 && fabric.pod_leaves == 0) f.fail("a 3-level fabric needs 'pod_leaves'");
  if (auto o = f.get("oversubscription")) fabric.oversubscription = o->as_double_in(1.0, 64.0);
  if (auto l = f.get("switch_latency")) fabric.switch_latency = l->as_time();
  return fabric;
}

/// The short form (docs/formats.md, "Short form"): a uniform cluster in a few lines. Latencies are end to end.
void load_short_form(const Field& cluster, TopologySpec& spec) {
  cluster.expect_keys({"name", "nodes", "gpus_per_node", "gpu", "intra_node", "inter_node"});
  if (auto n = cluster.get("name")) spec.name = n->as_string();
  const int nodes = cluster.has("nodes") ? static_cast<int>(cluster.require("nodes").as_int_in(1, 100000)) : 1;
  NodeSpec node;
  node.origin = origin_of(cluster);
  node.gpus = static_cast<int>(cluster.require("gpus_per_node").as_int_in(1, 1024));
  node.gpu_kind = read_gpu_kind(cluster.require("gpu"), "custom-node", spec);

  if (auto intra = cluster.get("intra_node")) {
    intra->expect_keys({"kind", "bandwidth", "latency"});
    constexpr std::pair<std::string_view, int> kinds[] = {{"nvswitch", 0}, {"nvlink", 1}, {"pcie", 2}};
    const int kind = intra->require("kind").as_enum(kinds);
    LinkSpec link;
    link.origin = origin_of(*intra);
    link.bandwidth = intra->require("bandwidth").as_bandwidth();
    const TimeNs latency = intra->has("latency") ? intra->require("latency").as_time() : TimeNs{};
    link.from = {"gpu*"};
    if (kind == 0) {  // one switch: each GPU link carries half of the end-to-end latency
      node.nvswitches = 1;
      link.kind = LinkKind::NvLink;
      link.to = {"nvswitch0"};
      link.latency = latency / 2;
    } else if (kind == 1) {  // direct mesh between every pair
      link.kind = LinkKind::NvLink;
      link.to = {"gpu*"};
      link.latency = latency;
    } else {
      node.pcie_switches = 1;
      link.kind = LinkKind::Pcie;
      link.to = {"pcie-switch0"};
      link.latency = latency / 2;
    }
    node.links.push_back(std::move(link));
  } else if (node.gpus > 1) {
    cluster.fail("a node with several GPUs needs 'intra_node'");
  }

  if (auto inter = cluster.get("inter_node")) {
    inter->expect_keys({"kind", "bandwidth", "latency", "nics_per_node"});
    FabricSpec fabric;
    fabric.origin = origin_of(*inter);
    fabric.network = std::string(inter->require("kind").as_enum(kNetworks));
    node.nics.count = inter->has("nics_per_node")
                          ? static_cast<int>(inter->require("nics_per_node").as_int_in(1, 256))
                          : 1;
    node.nics.bandwidth = inter->require("bandwidth").as_bandwidth();
    // NIC to switch and switch to NIC: the two halves of the end-to-end latency.
    node.nics.latency = inter->has("latency") ? inter->require("latency").as_time() / 2 : TimeNs{};
    // Each GPU reaches its NIC (GPU i uses NIC i*nics/gpus) over PCIe at the GPU's PCIe speed
    // (the NIC's speed for a custom GPU kind that gives none).
    const GpuKind* kind = find_gpu_kind(spec, node.gpu_kind);
    const BytesPerSec pcie = kind->pcie_bandwidth.in_bytes_per_sec() > 0 ? kind->pcie_bandwidth : node.nics.bandwidth;
    for (int g = 0; g < node.gpus; ++g) {
      LinkSpec link;
      link.kind = LinkKind::Pcie;
      link.origin = origin_of(*inter);
      link.from = {fmt::format("gpu{}", g)};
      link.to = {fmt::format("nic{}", static_cast<long>(g) * node.nics.count / node.gpus)};
      link.bandwidth = pcie;
      node.links.push_back(std::move(link));
    }
    spec.fabric = fabric;
  } else if (nodes > 1) {
    cluster.fail("several nodes need 'inter_node'");
  }
  spec.templates.emplace("node", std::move(node));
  spec.nodes.push_back({"node", nodes, origin_of(cluster)});
}

}  // namespace

std::string_view to_string(FabricKind k) noexcept {
  switch (k) {
    case FabricKind::SingleSwitch: return "single-switch";
    case FabricKind::FatTree: return "fat-tree";
    case FabricKind::RailOptimized: return "rail-optimized";
  }
  return "?";
}

namespace {

TopologySpec load_spec(const Field& root, int depth, const std::function<void(YamlDocument&)>& patch_included,
                       std::vector<GpuKind> kinds);

/// The one node template of the topology file `from` names (relative to the including file's folder).
/// The included file sees `spec`'s GPU kinds ahead of its own, and `spec` takes the included file's after.
NodeSpec included_node(const Field& from, int depth, const std::function<void(YamlDocument&)>& patch_included,
                       TopologySpec& spec) {
  if (depth >= 4) from.fail("'node_from' nests too deeply");
  const auto path = std::filesystem::path(from.file()).parent_path() / from.as_string();
  // The non-throwing overload: a name the file system refuses (too long, say) is the same error.
  std::error_code refused;
  if (!std::filesystem::exists(path, refused)) {
    from.fail(fmt::format("no such file '{}'{}", path.string(), refused ? " (" + refused.message() + ")" : ""));
  }
  YamlDocument included = YamlDocument::load(path);
  if (patch_included) patch_included(included);
  TopologySpec base = load_spec(included.root(), depth + 1, patch_included, std::move(spec.custom_gpu_kinds));
  if (base.templates.size() != 1) from.fail(fmt::format("'{}' must describe one kind of node", path.string()));
  spec.custom_gpu_kinds = std::move(base.custom_gpu_kinds);  // this file's, then the included file's
  return std::move(base.templates.begin()->second);
}

/// `node_groups: [{node_from: FILE, nodes: N}, ...]`: nodes of several kinds, each group the node of
/// another topology file, in the order written (node indices count on from group to group). Each file
/// becomes one template, named by the file as written, so two groups of one file share it.
void load_node_groups(const Field& groups, int depth, const std::function<void(YamlDocument&)>& patch_included,
                      TopologySpec& spec) {
  if (groups.items().empty()) groups.fail("'node_groups' needs at least one group");
  for (const Field& group : groups.items()) {
    group.expect_keys({"node_from", "nodes"});
    const Field from = group.require("node_from");
    const std::string name = from.as_string();
    if (!spec.templates.contains(name)) spec.templates.emplace(name, included_node(from, depth, patch_included, spec));
    const Field count = group.require("nodes");
    spec.nodes.push_back({name, static_cast<int>(count.as_int_in(1, 100000)), origin_of(count)});
  }
}

/// `nodes: N` beside `node_groups` (what `--set topology.nodes=N` writes): N nodes shared among the
/// groups in the proportions written, by largest remainder (ties to the earlier group), each group
/// keeping at least one. 2 + 2 nodes at N = 33: 17 + 16.
void share_nodes(const Field& nodes, std::vector<NodeGroup>& groups) {
  const auto total = static_cast<int>(nodes.as_int_in(1, 100000));
  const auto count = static_cast<int>(groups.size());
  if (total < count) {
    nodes.fail(fmt::format("{} nodes cannot hold the {} node groups (at least one node each)", total, count));
  }
  long written = 0;
  for (const NodeGroup& g : groups) written += g.count;
  std::vector<long> remainder(groups.size());
  int given = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const long exact = static_cast<long>(groups[i].count) * total;
    groups[i].count = std::max(1, static_cast<int>(exact / written));
    remainder[i] = groups[i].count == 1 && exact < written ? -1 : exact % written;
    given += groups[i].count;
  }
  // Hand out what flooring left (or take back what the one-node minimum added), largest remainder first.
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; given < total; k = (k + 1) % order.size(), ++given) ++groups[order[k]].count;
  for (std::size_t k = order.size(); given > total;) {
    k = k == 0 ? order.size() - 1 : k - 1;
    if (groups[order[k]].count > 1) {
      --groups[order[k]].count;
      --given;
    }
  }
}

/// The spec of `root`, which starts knowing `kinds` (those of the files that include it through
/// `node_from`, ahead of its own so that an including file's kind takes the place of one of the same id).
TopologySpec load_spec(const Field& root, int depth, const std::function<void(YamlDocument&)>& patch_included,
                       std::vector<GpuKind> kinds) {
  TopologySpec spec;
  spec.file = root.file();
  spec.custom_gpu_kinds = std::move(kinds);
  expect_input_kind(root, InputKind::Topology);
  if (auto declared = root.get("gpu_kinds")) {
    for (const auto& [id, kind] : declared->entries()) spec.custom_gpu_kinds.push_back(load_gpu_kind(kind, id));
  }
  if (auto profile = root.get("profile")) {
    const auto path = std::filesystem::path(root.file()).parent_path() / profile->as_string();
    std::error_code refused;
    if (!std::filesystem::is_regular_file(path, refused)) {
      profile->fail(fmt::format("no such profile file '{}'{}", path.string(),
                                refused ? " (" + refused.message() + ")" : ""));
    }
    spec.profile = path.string();
  }
  if (root.has("cluster")) {
    root.expect_keys({"cluster", "source", "gpu_kinds", "profile"});
    if (auto s = root.get("source")) spec.source = s->as_string();
    load_short_form(root.require("cluster"), spec);
    return spec;
  }
  root.expect_keys(
      {"name", "source", "gpu_kinds", "profile", "node", "node_from", "node_templates", "node_groups", "nodes", "fabric"});
  if (auto n = root.get("name")) spec.name = n->as_string();
  if (auto s = root.get("source")) spec.source = s->as_string();
  if (static_cast<int>(root.has("node")) + static_cast<int>(root.has("node_templates")) +
          static_cast<int>(root.has("node_from")) + static_cast<int>(root.has("node_groups")) != 1) {
    root.fail("give one of 'node' (one template for every node), 'node_from' (the node of another topology file), "
              "'node_templates' or 'node_groups' (nodes of several files), or use the short form 'cluster'");
  }
  if (auto groups = root.get("node_groups")) {
    load_node_groups(*groups, depth, patch_included, spec);
    if (auto nodes = root.get("nodes")) share_nodes(*nodes, spec.nodes);
    if (auto fabric = root.get("fabric")) spec.fabric = load_fabric(*fabric);
    return spec;
  }
  const Field nodes = root.require("nodes");
  if (auto from = root.get("node_from")) {
    // Reuse the single node template of another file (a cluster of DGX nodes names dgx-a100.yaml).
    spec.templates.emplace("node", included_node(*from, depth, patch_included, spec));
    spec.nodes.push_back({"node", static_cast<int>(nodes.as_int_in(1, 100000)), origin_of(nodes)});
  } else if (auto node = root.get("node")) {
    spec.templates.emplace("node", load_node(*node, "node", spec));
    spec.nodes.push_back({"node", static_cast<int>(nodes.as_int_in(1, 100000)), origin_of(nodes)});
  } else {
    for (const auto& [name, tmpl] : root.require("node_templates").entries()) {
      spec.templates.emplace(name, load_node(tmpl, name, spec));
    }
    for (const Field& group : nodes.items()) {
      group.expect_keys({"template", "count"});
      NodeGroup g{group.require("template").as_string(), 1, origin_of(group)};
      if (!spec.templates.contains(g.template_name)) {
        group.require("template").fail(fmt::format("no node template named '{}'", g.template_name));
      }
      if (auto c = group.get("count")) g.count = static_cast<int>(c->as_int_in(1, 100000));
      spec.nodes.push_back(std::move(g));
    }
  }
  if (auto fabric = root.get("fabric")) spec.fabric = load_fabric(*fabric);
  return spec;
}


}  // namespace

TopologySpec load_topology_spec(const Field& root, int depth,
                                const std::function<void(YamlDocument&)>& patch_included) {
  return load_spec(root, depth, patch_included, {});
}

FabricSpec load_fabric_spec(const Field& fabric) { return load_fabric(fabric); }

Cluster load_topology_file(const std::filesystem::path& path) {
  const YamlDocument doc = YamlDocument::load(path);
  return build_cluster(load_topology_spec(doc.root()));
}

}  // namespace mpsim::topology
