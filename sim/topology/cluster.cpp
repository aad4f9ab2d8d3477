#include "sim/topology/cluster.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "sim/topology/cluster_graph.h"

namespace mpsim::topology {

std::string_view to_string(DeviceKind k) noexcept {
  switch (k) {
    case DeviceKind::Gpu: return "gpu";
    case DeviceKind::NvSwitch: return "nvswitch";
    case DeviceKind::PcieSwitch: return "pcie-switch";
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Nic: return "nic";
    case DeviceKind::FabricSwitch: return "switch";
  }
  return "?";
}

std::string_view to_string(LinkKind k) noexcept {
  switch (k) {
    case LinkKind::NvLink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::Smp: return "smp";
    case LinkKind::Net: return "net";
  }
  return "?";
}

Cluster::Cluster() : graph_(std::make_unique<ClusterGraph>()) {}
Cluster::Cluster(const Cluster& other)
    : name(other.name),
      node_count(other.node_count),
      profile_file(other.profile_file),
      devices_(other.devices_),
      links_(other.links_),
      gpu_kinds_(other.gpu_kinds_),
      gpus_(other.gpus_),
      by_name_(other.by_name_),
      graph_(std::make_unique<ClusterGraph>(other.graph())) {}
Cluster::Cluster(Cluster&& other) noexcept = default;
Cluster& Cluster::operator=(const Cluster& other) {
  if (this != &other) *this = Cluster(other);
  return *this;
}
Cluster& Cluster::operator=(Cluster&& other) noexcept = default;
Cluster::~Cluster() = default;

const ClusterGraph& Cluster::graph() const noexcept {
  static const ClusterGraph empty;
  return graph_ ? *graph_ : empty;
}

DeviceId Cluster::add_device(Device device) {
  const DeviceId id{static_cast<std::uint32_t>(devices_.size())};
  if (!by_name_.emplace(device.name, id).second) {
    throw std::logic_error(fmt::format("device '{}' added twice", device.name));
  }
  if (device.kind == DeviceKind::Gpu) gpus_.push_back(id);
  devices_.push_back(std::move(device));
  if (!graph_) graph_ = std::make_unique<ClusterGraph>();
  const auto vertex = boost::add_vertex(graph_->graph);
  (void)vertex;
  return id;
}

LinkId Cluster::add_link(Link link) {
  const LinkId id{static_cast<std::uint32_t>(links_.size())};
  if (!graph_) graph_ = std::make_unique<ClusterGraph>();
  boost::add_edge(link.a.value, link.b.value, id.value, graph_->graph);
  links_.push_back(std::move(link));
  return id;
}

int Cluster::add_gpu_kind(const GpuKind& kind) {
  for (std::size_t i = 0; i < gpu_kinds_.size(); ++i) {
    if (gpu_kinds_[i] == kind) return static_cast<int>(i);
  }
  gpu_kinds_.push_back(kind);
  return static_cast<int>(gpu_kinds_.size() - 1);
}

std::vector<int> Cluster::job_gpu_kinds() const {
  std::vector<int> kinds;
  for (const DeviceId g : gpus_) {
    const int kind = devices_.at(g.value).gpu_kind;
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  return kinds;
}

std::optional<FlopsPerSec> Cluster::mean_training_peak(int dtype_bytes) const {
  if (gpus_.empty()) return std::nullopt;
  if (job_gpu_kinds().size() == 1) return gpu_kind_of(gpus_.front()).training_peak(dtype_bytes);  // exactly, no rounding
  double sum = 0;
  for (const DeviceId g : gpus_) {
    const auto peak = gpu_kind_of(g).training_peak(dtype_bytes);
    if (!peak) return std::nullopt;
    sum += peak->in_flop_per_sec();
  }
  return FlopsPerSec::flop_per_sec(sum / static_cast<double>(gpus_.size()));
}

const GpuKind& Cluster::gpu_kind_of(DeviceId gpu) const {
  const Device& d = device(gpu);
  if (d.kind != DeviceKind::Gpu) throw std::logic_error(fmt::format("'{}' is not a GPU", d.name));
  return gpu_kinds_.at(static_cast<std::size_t>(d.gpu_kind));
}

std::optional<DeviceId> Cluster::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::vector<DeviceId> Cluster::gpus_of_node(int node) const {
  std::vector<DeviceId> out;
  for (const DeviceId g : gpus_) {
    if (devices_[g.value].node == node) out.push_back(g);
  }
  return out;
}

void Cluster::keep_job_gpus(const JobShape& shape) {
  std::vector<DeviceId> kept;
  std::unordered_map<int, int> taken_of_node;
  for (const DeviceId g : gpus_) {
    if (static_cast<int>(kept.size()) == shape.gpus) break;
    if (taken_of_node[devices_[g.value].node]++ < shape.gpus_per_node) kept.push_back(g);
  }
  if (static_cast<int>(kept.size()) != shape.gpus) {
    throw std::invalid_argument(fmt::format("keep_job_gpus: {} GPUs of {} per node do not fit the cluster", shape.gpus,
                                            shape.gpus_per_node));
  }
  gpus_ = std::move(kept);
}

void Cluster::set_slowdown(DeviceId gpu, double slowdown) {
  Device& d = devices_.at(gpu.value);
  if (d.kind != DeviceKind::Gpu) throw std::logic_error(fmt::format("'{}' is not a GPU", d.name));
  d.slowdown = slowdown;
}

void Cluster::set_link_rate(LinkId link, BytesPerSec bandwidth, TimeNs latency) {
  Link& l = links_.at(link.value);
  l.bandwidth = bandwidth;
  l.latency = latency;
}

void Cluster::replace_gpu_kind(int index, GpuKind kind) { gpu_kinds_.at(static_cast<std::size_t>(index)) = std::move(kind); }

Cluster Cluster::with_every_gpu_as(int index) const {
  (void)gpu_kinds_.at(static_cast<std::size_t>(index));
  Cluster copy = *this;
  // The kind's own GPUs first (their nodes' links), the rest after them in order.
  std::stable_partition(copy.gpus_.begin(), copy.gpus_.end(),
                        [&](DeviceId g) { return devices_[g.value].gpu_kind == index; });
  for (const DeviceId g : copy.gpus_) copy.devices_[g.value].gpu_kind = index;
  return copy;
}

void Cluster::take_link_down(LinkId link) {
  links_.at(link.value).down = true;
  // The graph again without the links that are down; an edge's index stays its link id.
  auto rebuilt = std::make_unique<ClusterGraph>(ClusterGraph{ClusterGraph::Graph(devices_.size())});
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].down) continue;
    boost::add_edge(links_[i].a.value, links_[i].b.value, static_cast<std::uint32_t>(i), rebuilt->graph);
  }
  graph_ = std::move(rebuilt);
}

}  // namespace mpsim::topology
