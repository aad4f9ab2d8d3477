#include "sim/topology/route_table.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>

namespace mpsim::topology {

std::string_view to_string(PathClass c) noexcept {
  switch (c) {
    case PathClass::Local: return "LOC";
    case PathClass::NVL: return "NVL";
    case PathClass::PIX: return "PIX";
    case PathClass::PXB: return "PXB";
    case PathClass::PHB: return "PHB";
    case PathClass::SYS: return "SYS";
    case PathClass::NET: return "NET";
  }
  return "?";
}

namespace {

/// The search levels: each admits more link kinds than the one before (NCCL's PATH_* order).
enum class Level : std::uint8_t { NvLinkOnly, PcieSwitches, HostBridge, InterSocket, Network };
constexpr Level kLevels[] = {Level::NvLinkOnly, Level::PcieSwitches, Level::HostBridge, Level::InterSocket,
                             Level::Network};

bool link_allowed(LinkKind kind, Level level) {
  switch (kind) {
    case LinkKind::NvLink: return true;
    case LinkKind::Pcie: return level >= Level::PcieSwitches;
    case LinkKind::Smp: return level >= Level::InterSocket;
    case LinkKind::Net: return level >= Level::Network;
  }
  return false;
}

/// May traffic pass through device `d`, having entered it over a link of kind `entered`?
bool may_forward(DeviceKind d, Level level) {
  switch (d) {
    case DeviceKind::Gpu: return false;  // GPUs do not forward for other GPUs
    case DeviceKind::Cpu: return level >= Level::HostBridge;
    case DeviceKind::NvSwitch:
    case DeviceKind::PcieSwitch:
    case DeviceKind::Nic:
    case DeviceKind::FabricSwitch: return true;
  }
  return false;
}

struct Label {
  int hops = std::numeric_limits<int>::max();
  double bandwidth = 0;  // bottleneck so far, bytes/s
  std::int64_t latency_ns = 0;
  std::int64_t pred_link = -1;
  bool settled = false;
};

/// Widest-shortest path search from src admitting the links and forwarders of `level`.
std::vector<Label> search(const Cluster& cluster, DeviceId src, Level level, std::optional<DeviceId> stop_at = {}) {
  const auto& g = cluster.graph();
  std::vector<Label> labels(cluster.devices().size());
  using Entry = std::tuple<int, double, std::uint32_t>;  // hops, -bandwidth, vertex: deterministic order
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  labels[src.value].hops = 0;
  labels[src.value].bandwidth = std::numeric_limits<double>::infinity();
  queue.emplace(0, -labels[src.value].bandwidth, src.value);
  const auto edge_index = boost::get(boost::edge_index, g);
  while (!queue.empty()) {
    const auto [hops, neg_bw, v] = queue.top();
    queue.pop();
    Label& here = labels[v];
    if (here.settled) continue;
    here.settled = true;
    if (stop_at && v == stop_at->value) break;  // its label is final once settled
    const Device& device = cluster.devices()[v];
    if (v != src.value && !may_forward(device.kind, level)) continue;
    const LinkKind entered = here.pred_link >= 0 ? cluster.links()[static_cast<std::size_t>(here.pred_link)].kind
                                                 : LinkKind::Pcie;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      const std::uint32_t link_index = edge_index[*e];
      const Link& link = cluster.links()[link_index];
      if (!link_allowed(link.kind, level)) continue;
      // A NIC joins its PCIe side to the network; it is not a switch between two PCIe devices.
      if (device.kind == DeviceKind::Nic && v != src.value && (entered == LinkKind::Net) == (link.kind == LinkKind::Net)) {
        continue;
      }
      const auto w = static_cast<std::uint32_t>(boost::target(*e, g));
      Label& next = labels[w];
      if (next.settled) continue;
      const int h = hops + 1;
      const double bw = std::min(-neg_bw, link.bandwidth.in_bytes_per_sec());
      if (h < next.hops || (h == next.hops && bw > next.bandwidth)) {
        next.hops = h;
        next.bandwidth = bw;
        next.latency_ns = here.latency_ns + link.latency.base();
        next.pred_link = link_index;
        queue.emplace(h, -bw, w);
      }
    }
  }
  return labels;
}

PathClass classify(const Cluster& cluster, const Route& r) {
  if (r.links.empty()) return PathClass::Local;
  bool all_nvlink = true;
  bool smp = false;
  bool net = false;
  for (const LinkId l : r.links) {
    const LinkKind k = cluster.link(l).kind;
    all_nvlink = all_nvlink && k == LinkKind::NvLink;
    smp = smp || k == LinkKind::Smp;
    net = net || k == LinkKind::Net;
  }
  if (net) return PathClass::NET;
  if (smp) return PathClass::SYS;
  if (all_nvlink) return PathClass::NVL;
  int pcie_switches = 0;
  for (std::size_t i = 1; i + 1 < r.hops.size(); ++i) {
    const DeviceKind k = cluster.device(r.hops[i]).kind;
    if (k == DeviceKind::Cpu) return PathClass::PHB;
    if (k == DeviceKind::PcieSwitch) ++pcie_switches;
  }
  return pcie_switches <= 1 ? PathClass::PIX : PathClass::PXB;
}

Route trace_back(const Cluster& cluster, const std::vector<Label>& labels, DeviceId src, DeviceId dst) {
  Route r;
  r.src = src;
  r.dst = dst;
  r.latency = TimeNs::ns(labels[dst.value].latency_ns);
  std::uint32_t v = dst.value;
  r.hops.push_back(dst);
  while (v != src.value) {
    const auto l = static_cast<std::uint32_t>(labels[v].pred_link);
    const Link& link = cluster.links()[l];
    r.links.push_back(LinkId{l});
    v = link.a.value == v ? link.b.value : link.a.value;
    r.hops.push_back(DeviceId{v});
  }
  std::reverse(r.hops.begin(), r.hops.end());
  std::reverse(r.links.begin(), r.links.end());
  r.bandwidth = r.links.empty() ? BytesPerSec::bytes_per_sec(std::numeric_limits<double>::infinity())
                                : BytesPerSec::bytes_per_sec(labels[dst.value].bandwidth);
  r.path_class = classify(cluster, r);
  return r;
}

}  // namespace

std::vector<std::optional<Route>> routes_from(const Cluster& cluster, DeviceId src) {
  const std::size_t n = cluster.devices().size();
  std::vector<std::optional<Route>> out(n);
  std::size_t found = 0;
  for (const Level level : kLevels) {
    const auto labels = search(cluster, src, level);
    for (std::uint32_t d = 0; d < n; ++d) {
      if (out[d] || !labels[d].settled) continue;
      out[d] = trace_back(cluster, labels, src, DeviceId{d});
      ++found;
    }
    if (found == n) break;
  }
  return out;
}

std::optional<Route> find_route(const Cluster& cluster, DeviceId src, DeviceId dst) {
  for (const Level level : kLevels) {
    const auto labels = search(cluster, src, level, dst);
    if (labels[dst.value].settled) return trace_back(cluster, labels, src, dst);
  }
  return std::nullopt;
}

RouteTable::RouteTable(const Cluster& cluster, const std::vector<DeviceId>& sources) : cluster_(&cluster) {
  std::vector<DeviceId> todo = sources;
  if (todo.empty() && cluster.gpus().size() <= kPrecomputeAllLimit) todo = cluster.gpus();
  for (const DeviceId s : todo) from_.emplace(s.value, routes_from(cluster, s));
}

std::optional<Route> RouteTable::route(DeviceId src, DeviceId dst) const {
  if (const auto it = from_.find(src.value); it != from_.end()) return it->second.at(dst.value);
  return find_route(*cluster_, src, dst);
}

}  // namespace mpsim::topology
