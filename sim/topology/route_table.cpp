#include "sim/topology/route_table.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "sim/topology/cluster_graph.h"

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

/// Labels for every device: for searches that may reach the whole cluster.
struct DenseLabels {
  explicit DenseLabels(std::size_t n) : labels(n) {}
  Label& operator[](std::uint32_t v) { return labels[v]; }
  [[nodiscard]] const Label* find(std::uint32_t v) const { return labels[v].settled ? &labels[v] : nullptr; }
  std::vector<Label> labels;
};

/// Labels for the devices a search touches: for searches that stay inside one node.
struct SparseLabels {
  Label& operator[](std::uint32_t v) { return labels[v]; }
  [[nodiscard]] const Label* find(std::uint32_t v) const {
    const auto it = labels.find(v);
    return it != labels.end() && it->second.settled ? &it->second : nullptr;
  }
  std::unordered_map<std::uint32_t, Label> labels;
};

/// Widest-shortest path search from src admitting the links and forwarders of `level`.
template <typename Labels>
void search(const Cluster& cluster, DeviceId src, Level level, std::optional<DeviceId> stop_at, Labels& labels) {
  const auto& g = cluster.graph().graph;
  using Entry = std::tuple<int, double, std::uint32_t>;  // hops, -bandwidth, vertex: deterministic order
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  labels[src.value].hops = 0;
  labels[src.value].bandwidth = std::numeric_limits<double>::infinity();
  queue.emplace(0, -std::numeric_limits<double>::infinity(), src.value);
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
    const std::int64_t latency = here.latency_ns;
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
        next.latency_ns = latency + link.latency.base();
        next.pred_link = link_index;
        queue.emplace(h, -bw, w);
      }
    }
  }
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

/// The path from the search's source to `dst`, in hops and links (src first).
template <typename Labels>
void path_to(const Cluster& cluster, const Labels& labels, DeviceId src, DeviceId dst, std::vector<DeviceId>& hops,
             std::vector<LinkId>& links) {
  std::vector<DeviceId> h{dst};
  std::vector<LinkId> l;
  std::uint32_t v = dst.value;
  while (v != src.value) {
    const auto link_id = static_cast<std::uint32_t>(labels.find(v)->pred_link);
    const Link& link = cluster.links()[link_id];
    l.push_back(LinkId{link_id});
    v = link.a.value == v ? link.b.value : link.a.value;
    h.push_back(DeviceId{v});
  }
  hops.insert(hops.end(), h.rbegin(), h.rend());
  links.insert(links.end(), l.rbegin(), l.rend());
}

template <typename Labels>
Route trace_back(const Cluster& cluster, const Labels& labels, DeviceId src, DeviceId dst) {
  Route r;
  r.src = src;
  r.dst = dst;
  const Label& at = *labels.find(dst.value);
  r.latency = TimeNs::ns(at.latency_ns);
  path_to(cluster, labels, src, dst, r.hops, r.links);
  r.bandwidth = r.links.empty() ? BytesPerSec::bytes_per_sec(std::numeric_limits<double>::infinity())
                                : BytesPerSec::bytes_per_sec(at.bandwidth);
  r.path_class = classify(cluster, r);
  return r;
}

}  // namespace

/// Caches of one RouteFinder: labels of node-local searches per device, and shortest paths
/// between fabric switches per source switch.
struct RouteFinder::Caches {
  std::unordered_map<std::uint32_t, SparseLabels> local;   // InterSocket-level search from a device
  std::vector<int> switch_index;                           // device -> index among fabric switches, or -1
  std::vector<DeviceId> switches;
  std::unordered_map<int, std::vector<Label>> fabric;      // source switch -> labels by switch index
  std::vector<std::vector<LinkId>> net_links;              // by device: its links of kind Net
  bool composite = true;  // every Net link joins a NIC to a switch or two switches
  std::unordered_map<std::uint32_t, std::vector<std::pair<std::uint32_t, PathClass>>> nics;  // by device: NICs, class
};

RouteFinder::RouteFinder(const Cluster& cluster) : cluster_(&cluster), caches_(std::make_unique<Caches>()) {
  Caches& c = *caches_;
  c.switch_index.assign(cluster.devices().size(), -1);
  c.net_links.resize(cluster.devices().size());
  for (std::uint32_t d = 0; d < cluster.devices().size(); ++d) {
    if (cluster.devices()[d].kind == DeviceKind::FabricSwitch) {
      c.switch_index[d] = static_cast<int>(c.switches.size());
      c.switches.push_back(DeviceId{d});
    }
  }
  for (std::uint32_t l = 0; l < cluster.links().size(); ++l) {
    const Link& link = cluster.links()[l];
    if (link.kind != LinkKind::Net || link.down) continue;
    c.net_links[link.a.value].push_back(LinkId{l});
    c.net_links[link.b.value].push_back(LinkId{l});
    const DeviceKind ka = cluster.device(link.a).kind;
    const DeviceKind kb = cluster.device(link.b).kind;
    const bool nic_to_switch = (ka == DeviceKind::Nic && kb == DeviceKind::FabricSwitch) ||
                               (kb == DeviceKind::Nic && ka == DeviceKind::FabricSwitch);
    const bool switch_to_switch = ka == DeviceKind::FabricSwitch && kb == DeviceKind::FabricSwitch;
    c.composite = c.composite && (nic_to_switch || switch_to_switch);
  }
}

RouteFinder::~RouteFinder() = default;

namespace {

/// Widest-shortest paths between fabric switches over switch-to-switch links, from `from`.
std::vector<Label> fabric_search(const Cluster& cluster, const std::vector<int>& switch_index,
                                 const std::vector<std::vector<LinkId>>& net_links, std::size_t switch_count,
                                 DeviceId from) {
  std::vector<Label> labels(switch_count);
  using Entry = std::tuple<int, double, std::uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  const auto start = static_cast<std::size_t>(switch_index[from.value]);
  labels[start].hops = 0;
  labels[start].bandwidth = std::numeric_limits<double>::infinity();
  queue.emplace(0, -std::numeric_limits<double>::infinity(), from.value);
  while (!queue.empty()) {
    const auto [hops, neg_bw, v] = queue.top();
    queue.pop();
    Label& here = labels[static_cast<std::size_t>(switch_index[v])];
    if (here.settled) continue;
    here.settled = true;
    for (const LinkId l : net_links[v]) {
      const Link& link = cluster.link(l);
      const std::uint32_t w = link.a.value == v ? link.b.value : link.a.value;
      if (switch_index[w] < 0) continue;
      Label& next = labels[static_cast<std::size_t>(switch_index[w])];
      if (next.settled) continue;
      const int h = hops + 1;
      const double bw = std::min(-neg_bw, link.bandwidth.in_bytes_per_sec());
      if (h < next.hops || (h == next.hops && bw > next.bandwidth)) {
        next.hops = h;
        next.bandwidth = bw;
        next.latency_ns = here.latency_ns + link.latency.base();
        next.pred_link = l.value;
        queue.emplace(h, -bw, w);
      }
    }
  }
  return labels;
}

}  // namespace

std::optional<Route> RouteFinder::route(DeviceId src, DeviceId dst) {
  const Cluster& cluster = *cluster_;
  Caches& c = *caches_;
  const bool endpoints_in_nodes = cluster.device(src).kind != DeviceKind::FabricSwitch &&
                                  cluster.device(dst).kind != DeviceKind::FabricSwitch;
  // Inside a node: the levels below the network never leave it, so these searches are small, and
  // pointless between two nodes.
  if (!endpoints_in_nodes || cluster.device(src).node == cluster.device(dst).node) {
    for (const Level level : {Level::NvLinkOnly, Level::PcieSwitches, Level::HostBridge, Level::InterSocket}) {
      SparseLabels labels;
      search(cluster, src, level, dst, labels);
      if (labels.find(dst.value) != nullptr) return trace_back(cluster, labels, src, dst);
    }
  }
  if (!c.composite || !endpoints_in_nodes) {
    DenseLabels labels(cluster.devices().size());
    search(cluster, src, Level::Network, dst, labels);
    if (labels.find(dst.value) == nullptr) return std::nullopt;
    return trace_back(cluster, labels, src, dst);
  }
  // Across the network: src's PCIe side to one of its NICs, the fabric between the NICs' switches,
  // and a NIC to dst. Each part is a widest-shortest path; the best combination is the route.
  const auto local = [&](DeviceId d) -> const SparseLabels& {
    auto it = c.local.find(d.value);
    if (it == c.local.end()) {
      SparseLabels labels;
      search(cluster, d, Level::InterSocket, std::nullopt, labels);
      it = c.local.emplace(d.value, std::move(labels)).first;
    }
    return it->second;
  };
  const SparseLabels& from = local(src);
  const SparseLabels& to = local(dst);
  // A device's NICs with the class of its path to each (NCCL's GPU-to-NET path type).
  const auto nics_of = [&](DeviceId d, const SparseLabels& labels) -> const std::vector<std::pair<std::uint32_t, PathClass>>& {
    auto it = c.nics.find(d.value);
    if (it == c.nics.end()) {
      std::vector<std::pair<std::uint32_t, PathClass>> nics;
      for (const auto& [v, label] : labels.labels) {
        if (!label.settled || cluster.devices()[v].kind != DeviceKind::Nic || c.net_links[v].empty()) continue;
        Route part;
        path_to(cluster, labels, d, DeviceId{v}, part.hops, part.links);
        nics.emplace_back(v, classify(cluster, part));
      }
      std::sort(nics.begin(), nics.end());
      it = c.nics.emplace(d.value, std::move(nics)).first;
    }
    return it->second;
  };
  // NCCL's choice: each GPU uses its nearest NIC (best path class: its own PCIe switch's before one
  // across the host bridge or the other socket), whatever the fabric then costs; then the fewest
  // hops, then the widest bottleneck. Among equal candidates (GPUs sharing a PCIe switch with several
  // NICs, as in DGX A100 or p5), the GPU of local index i takes the (i mod k)-th of the k NICs, as
  // NCCL hands the GPUs that share NICs one each in local order; the destination side likewise.
  struct Choice {
    PathClass src_class = PathClass::NET, dst_class = PathClass::NET;
    int hops = std::numeric_limits<int>::max();
    double bandwidth = 0;
    std::uint32_t src_nic = 0, dst_nic = 0;
    LinkId up, down;
    [[nodiscard]] auto key() const { return std::make_tuple(src_class, dst_class, hops, -bandwidth); }
  };
  std::vector<Choice> ties;
  const auto& src_nics = nics_of(src, from);
  const auto& dst_nics = nics_of(dst, to);
  for (const auto& [n, src_class] : src_nics) {
    const Label& ln = *from.find(n);
    for (const LinkId up : c.net_links[n]) {
      const Link& e = cluster.link(up);
      const DeviceId a = e.a.value == n ? e.b : e.a;
      auto fit = c.fabric.find(c.switch_index[a.value]);
      if (fit == c.fabric.end()) {
        fit = c.fabric.emplace(c.switch_index[a.value], fabric_search(cluster, c.switch_index, c.net_links,
                                                                      c.switches.size(), a)).first;
      }
      for (const auto& [m, dst_class] : dst_nics) {
        const Label& lm = *to.find(m);
        for (const LinkId down : c.net_links[m]) {
          if (down == up) continue;  // a switch does not send a NIC's traffic back out of the same port
          const Link& f = cluster.link(down);
          const DeviceId b = f.a.value == m ? f.b : f.a;
          const Label& fab = fit->second[static_cast<std::size_t>(c.switch_index[b.value])];
          if (!fab.settled) continue;
          const int hops = ln.hops + 1 + fab.hops + 1 + lm.hops;
          const double bw = std::min({ln.bandwidth, e.bandwidth.in_bytes_per_sec(), fab.bandwidth,
                                      f.bandwidth.in_bytes_per_sec(), lm.bandwidth});
          const Choice candidate{src_class, dst_class, hops, bw, n, m, up, down};
          if (ties.empty() || candidate.key() < ties.front().key()) {
            ties.assign(1, candidate);
          } else if (candidate.key() == ties.front().key()) {
            ties.push_back(candidate);
          }
        }
      }
    }
  }
  if (ties.empty()) return std::nullopt;
  const auto pick = [](const std::vector<std::uint32_t>& options, int local_index) {
    return options[static_cast<std::size_t>(local_index) % options.size()];
  };
  std::vector<std::uint32_t> options;  // the distinct NICs of the ties, ascending (the search order)
  for (const Choice& t : ties) {
    if (std::find(options.begin(), options.end(), t.src_nic) == options.end()) options.push_back(t.src_nic);
  }
  const std::uint32_t src_nic = pick(options, cluster.device(src).local_index);
  options.clear();
  for (const Choice& t : ties) {
    if (t.src_nic == src_nic && std::find(options.begin(), options.end(), t.dst_nic) == options.end()) {
      options.push_back(t.dst_nic);
    }
  }
  const std::uint32_t dst_nic = pick(options, cluster.device(dst).local_index);
  const Choice& best = *std::find_if(ties.begin(), ties.end(),
                                     [&](const Choice& t) { return t.src_nic == src_nic && t.dst_nic == dst_nic; });
  Route r;
  r.src = src;
  r.dst = dst;
  path_to(cluster, from, src, DeviceId{best.src_nic}, r.hops, r.links);
  const Link& e = cluster.link(best.up);
  const DeviceId a = e.a.value == best.src_nic ? e.b : e.a;
  r.links.push_back(best.up);
  // The fabric part, switch a to switch b.
  const Link& f = cluster.link(best.down);
  const DeviceId b = f.a.value == best.dst_nic ? f.b : f.a;
  {
    const auto& fabric = c.fabric.at(c.switch_index[a.value]);
    std::vector<DeviceId> switches{b};
    std::vector<LinkId> links;
    std::uint32_t v = b.value;
    while (v != a.value) {
      const auto l = static_cast<std::uint32_t>(fabric[static_cast<std::size_t>(c.switch_index[v])].pred_link);
      links.push_back(LinkId{l});
      const Link& link = cluster.links()[l];
      v = link.a.value == v ? link.b.value : link.a.value;
      switches.push_back(DeviceId{v});
    }
    r.hops.insert(r.hops.end(), switches.rbegin(), switches.rend());
    r.links.insert(r.links.end(), links.rbegin(), links.rend());
  }
  r.links.push_back(best.down);
  // dst's side, walked from the NIC: the reverse of the search from dst.
  std::vector<DeviceId> tail_hops;
  std::vector<LinkId> tail_links;
  path_to(cluster, to, dst, DeviceId{best.dst_nic}, tail_hops, tail_links);
  r.hops.insert(r.hops.end(), tail_hops.rbegin(), tail_hops.rend());
  r.links.insert(r.links.end(), tail_links.rbegin(), tail_links.rend());
  std::int64_t latency = 0;
  for (const LinkId l : r.links) latency += cluster.link(l).latency.base();
  r.latency = TimeNs::ns(latency);
  r.bandwidth = BytesPerSec::bytes_per_sec(best.bandwidth);
  r.path_class = classify(cluster, r);
  return r;
}

std::vector<std::optional<Route>> routes_from(const Cluster& cluster, DeviceId src) {
  RouteFinder finder(cluster);
  std::vector<std::optional<Route>> out(cluster.devices().size());
  for (const DeviceId g : cluster.gpus()) out[g.value] = finder.route(src, g);
  return out;
}

std::optional<DeviceId> first_unreachable_gpu(const Cluster& cluster) {
  const auto& gpus = cluster.gpus();
  if (gpus.size() < 2) return std::nullopt;
  const auto routes = routes_from(cluster, gpus.front());
  for (const DeviceId g : gpus) {
    if (!routes[g.value]) return g;
  }
  return std::nullopt;
}

std::optional<Route> find_route(const Cluster& cluster, DeviceId src, DeviceId dst) {
  return RouteFinder(cluster).route(src, dst);
}

RouteTable::RouteTable(const Cluster& cluster, const std::vector<DeviceId>& sources) : cluster_(&cluster) {
  std::vector<DeviceId> todo = sources;
  if (todo.empty() && cluster.gpus().size() <= kPrecomputeAllLimit) todo = cluster.gpus();
  RouteFinder finder(cluster);
  for (const DeviceId s : todo) {
    std::vector<std::optional<Route>> routes(cluster.devices().size());
    for (const DeviceId g : cluster.gpus()) routes[g.value] = finder.route(s, g);
    from_.emplace(s.value, std::move(routes));
  }
}

std::optional<Route> RouteTable::route(DeviceId src, DeviceId dst) const {
  if (const auto it = from_.find(src.value); it != from_.end()) {
    if (const auto& r = it->second.at(dst.value)) return r;
  }
  return find_route(*cluster_, src, dst);
}

}  // namespace mpsim::topology
