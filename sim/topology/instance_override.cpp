#include "sim/topology/instance_override.h"

#include <charconv>
#include <optional>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "sim/core/input_error.h"
#include "sim/topology/route_table.h"

namespace mpsim::topology {

namespace {

/// `collection[name].field`, split.
struct InstancePath {
  std::string collection;  ///< nodes | gpus | links
  std::string name;
  std::string field;
};

std::optional<InstancePath> split_instance_path(std::string_view path) {
  const auto open = path.find('[');
  const auto close = path.find(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  InstancePath p{std::string(path.substr(0, open)), std::string(path.substr(open + 1, close - open - 1)), ""};
  std::string_view rest = path.substr(close + 1);
  if (!rest.empty() && rest.front() == '.') rest.remove_prefix(1);
  p.field = std::string(rest);
  return p;
}

[[noreturn]] void fail(const Override& o, const std::string& message) {
  throw InputError({o.origin, 0, 0}, o.path, message);
}

/// The value as YAML reads it (so `"200 Gb/s"` and `200 Gb/s` are the same text).
std::string scalar_of(const Override& o) {
  try {
    const YAML::Node node = YAML::Load(o.value);
    if (!node.IsScalar()) fail(o, fmt::format("'{}' is not a single value", o.value));
    return node.as<std::string>();
  } catch (const YAML::Exception&) {
    fail(o, fmt::format("'{}' is not a YAML value", o.value));
  }
}

double slowdown_of(const Override& o) {
  const std::string text = scalar_of(o);
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= 1.0 && v <= 100.0)) {
    fail(o, fmt::format("a slowdown is a factor from 1 to 100 (1.25: its passes take 25% longer), got '{}'", text));
  }
  return v;
}

BytesPerSec bandwidth_of(const Override& o) {
  const auto parsed = parse_bandwidth(scalar_of(o));
  if (!parsed.ok()) fail(o, parsed.error);
  if (parsed.value.in_bytes_per_sec() <= 0) fail(o, "a bandwidth must be positive (take the link down instead)");
  return parsed.value;
}

TimeNs latency_of(const Override& o) {
  const auto parsed = parse_time(scalar_of(o));
  if (!parsed.ok()) fail(o, parsed.error);
  return parsed.value;
}

/// Node `name`: "5" or "node5".
int node_of(const Cluster& cluster, const Override& o, std::string_view name) {
  std::string_view digits = name;
  if (digits.rfind("node", 0) == 0) digits.remove_prefix(4);
  int node = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), node);
  if (ec != std::errc() || end != digits.data() + digits.size() || node < 0 || node >= cluster.node_count) {
    fail(o, cluster.node_count == 1
                ? fmt::format("no node '{}': this cluster has one node (node0)", name)
                : fmt::format("no node '{}': this cluster has {} nodes (node0 to node{})", name, cluster.node_count,
                              cluster.node_count - 1));
  }
  return node;
}

void set_node(Cluster& cluster, const Override& o, const InstancePath& p) {
  const int node = node_of(cluster, o, p.name);
  if (p.field == "slowdown") {
    const double slowdown = slowdown_of(o);
    for (std::uint32_t d = 0; d < cluster.devices().size(); ++d) {
      const Device& device = cluster.devices()[d];
      if (device.kind == DeviceKind::Gpu && device.node == node) cluster.set_slowdown(DeviceId{d}, slowdown);
    }
    return;
  }
  if (p.field != "nics.bandwidth" && p.field != "nics.latency") {
    fail(o, fmt::format("a node's what-ifs are slowdown, nics.bandwidth and nics.latency, not '{}'", p.field));
  }
  // The links between node's NICs and the fabric: the NICs' ports.
  int ports = 0;
  for (std::uint32_t l = 0; l < cluster.links().size(); ++l) {
    const Link& link = cluster.links()[l];
    if (link.kind != LinkKind::Net) continue;
    const Device& a = cluster.device(link.a);
    const Device& b = cluster.device(link.b);
    const bool port = (a.kind == DeviceKind::Nic && a.node == node) || (b.kind == DeviceKind::Nic && b.node == node);
    if (!port) continue;
    ++ports;
    if (p.field == "nics.bandwidth") {
      cluster.set_link_rate(LinkId{l}, bandwidth_of(o), link.latency);
    } else {
      cluster.set_link_rate(LinkId{l}, link.bandwidth, latency_of(o));
    }
  }
  if (ports == 0) fail(o, fmt::format("node{} has no NIC on a fabric", node));
}

DeviceId gpu_named(const Cluster& cluster, const Override& o, const std::string& name) {
  const auto id = cluster.find(name);
  if (!id || cluster.device(*id).kind != DeviceKind::Gpu) {
    fail(o, fmt::format("no GPU named '{}' (GPUs are named node<i>/gpu<j>, as `mpsim topo show` lists them)", name));
  }
  return *id;
}

LinkId link_named(const Cluster& cluster, const Override& o, const std::string& name) {
  for (std::uint32_t l = 0; l < cluster.links().size(); ++l) {
    if (cluster.links()[l].name == name) return LinkId{l};
  }
  fail(o, fmt::format("no link named '{}' (`mpsim topo show --json` lists them under links, by id)", name));
}

/// A link down may cut a GPU off: every GPU must still reach the first one.
void check_still_connected(const Cluster& cluster, const Override& o) {
  if (const auto cut = first_unreachable_gpu(cluster)) {
    fail(o, fmt::format("with this link down {} cannot reach {}", cluster.device(*cut).name,
                        cluster.device(cluster.gpus().front()).name));
  }
}

void set_link(Cluster& cluster, const Override& o, const InstancePath& p) {
  const LinkId id = link_named(cluster, o, p.name);
  const Link& link = cluster.link(id);
  if (p.field == "bandwidth") return cluster.set_link_rate(id, bandwidth_of(o), link.latency);
  if (p.field == "latency") return cluster.set_link_rate(id, link.bandwidth, latency_of(o));
  if (p.field == "down") {
    const std::string text = scalar_of(o);
    if (text != "true" && text != "false") fail(o, fmt::format("down is true or false, got '{}'", text));
    if (text == "false") return;
    cluster.take_link_down(id);
    check_still_connected(cluster, o);
    return;
  }
  fail(o, fmt::format("a link's what-ifs are bandwidth, latency and down, not '{}'", p.field));
}

}  // namespace

bool is_instance_path(std::string_view path) {
  const auto p = split_instance_path(path);
  if (!p) return false;
  if (p->collection == "gpus" || p->collection == "links") return true;
  // A node group's own fields stay edits of the file.
  return p->collection == "nodes" && p->field != "template" && p->field != "count";
}

void apply_instance_overrides(Cluster& cluster, const std::vector<Override>& overrides) {
  for (const Override& o : overrides) {
    if (o.target != "topology" || !is_instance_path(o.path)) continue;
    const InstancePath p = *split_instance_path(o.path);
    if (p.collection == "nodes") {
      set_node(cluster, o, p);
    } else if (p.collection == "gpus") {
      if (p.field != "slowdown") fail(o, fmt::format("a GPU's what-if is slowdown, not '{}'", p.field));
      cluster.set_slowdown(gpu_named(cluster, o, p.name), slowdown_of(o));
    } else {
      set_link(cluster, o, p);
    }
  }
}

}  // namespace mpsim::topology
