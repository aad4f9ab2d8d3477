#pragma once
/// The expanded cluster: every device and link, and the graph routes are searched on (a Boost.Graph
/// behind ClusterGraph, sim/topology/cluster_graph.h, so that users of the cluster do not compile it).
///
/// Built from a TopologySpec by build_cluster(); a plain value afterwards (copyable, immutable in
/// use). Device names follow docs/formats.md, "Full form": `node<i>/gpu<j>`, `node<i>/nvswitch<j>`,
/// `node<i>/pcie-switch<j>`, `node<i>/cpu<j>`, `node<i>/nic<j>`, `fabric/<name>`.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/core/units.h"
#include "sim/topology/gpu_kind.h"
#include "sim/topology/job_shape.h"

namespace mpsim::topology {

enum class DeviceKind : std::uint8_t { Gpu, NvSwitch, PcieSwitch, Cpu, Nic, FabricSwitch };
enum class LinkKind : std::uint8_t { NvLink, Pcie, Smp, Net };
enum class Duplex : std::uint8_t { Full, Half };

[[nodiscard]] std::string_view to_string(DeviceKind k) noexcept;
[[nodiscard]] std::string_view to_string(LinkKind k) noexcept;

struct DeviceId {
  std::uint32_t value = 0;
  friend auto operator<=>(DeviceId, DeviceId) = default;
};
struct LinkId {
  std::uint32_t value = 0;
  friend auto operator<=>(LinkId, LinkId) = default;
};

struct Device {
  std::string name;        ///< full name, e.g. "node1/gpu3"
  DeviceKind kind = DeviceKind::Gpu;
  int node = -1;           ///< node index; -1 for fabric switches
  int local_index = 0;     ///< j in `gpu<j>`
  int gpu_kind = -1;       ///< index into Cluster::gpu_kinds for GPUs
  /// GPUs: how much longer its passes take than its kind says (a what-if: 1.25 for a GPU 25% slow).
  double slowdown = 1.0;
};

struct Link {
  std::string name;        ///< e.g. "node0/nvlink:gpu0-nvswitch0", "net:node0/nic0-fabric/leaf0"
  DeviceId a;
  DeviceId b;
  LinkKind kind = LinkKind::NvLink;
  BytesPerSec bandwidth;   ///< per direction (for a half-duplex link: shared by both)
  TimeNs latency;
  Duplex duplex = Duplex::Full;
  bool down = false;       ///< a what-if: the link carries nothing and no route uses it
};

/// The devices as vertices and the links that are up as edges (sim/topology/cluster_graph.h).
struct ClusterGraph;

class Cluster {
 public:
  Cluster();
  Cluster(const Cluster& other);
  Cluster(Cluster&& other) noexcept;
  Cluster& operator=(const Cluster& other);
  Cluster& operator=(Cluster&& other) noexcept;
  ~Cluster();

  /// Adders used by build_cluster(); names must be unique.
  DeviceId add_device(Device device);
  LinkId add_link(Link link);
  int add_gpu_kind(const GpuKind& kind);  ///< returns its index; the same kind twice is stored once

  std::string name;
  int node_count = 0;
  /// The software profile the topology names (`profile:`, a path), which the commands apply unless
  /// --profile gives another; empty: none.
  std::string profile_file;

  [[nodiscard]] const std::vector<Device>& devices() const noexcept { return devices_; }
  [[nodiscard]] const std::vector<Link>& links() const noexcept { return links_; }
  [[nodiscard]] const std::vector<GpuKind>& gpu_kinds() const noexcept { return gpu_kinds_; }
  [[nodiscard]] const std::vector<DeviceId>& gpus() const noexcept { return gpus_; }
  [[nodiscard]] const Device& device(DeviceId id) const { return devices_.at(id.value); }
  [[nodiscard]] const Link& link(LinkId id) const { return links_.at(id.value); }
  [[nodiscard]] const GpuKind& gpu_kind_of(DeviceId gpu) const;
  [[nodiscard]] std::optional<DeviceId> find(std::string_view name) const;
  [[nodiscard]] const ClusterGraph& graph() const noexcept;
  /// The kinds of the job's GPUs (indices into gpu_kinds()), each once, in the order the GPUs show them.
  [[nodiscard]] std::vector<int> job_gpu_kinds() const;
  /// The mean over the job's GPUs of their kinds' training peaks (GpuKind::training_peak): the
  /// denominator of a mixed cluster's MFU, as each GPU's own peak is of one kind's. Nothing when a kind
  /// has no such peak or there are no GPUs.
  [[nodiscard]] std::optional<FlopsPerSec> mean_training_peak(int dtype_bytes) const;
  /// GPUs of node `node`, in local order.
  [[nodiscard]] std::vector<DeviceId> gpus_of_node(int node) const;
  /// Keeps only the GPUs a job of `shape` runs on, in node order: the first shape.gpus_per_node of
  /// each node, shape.gpus in all (8 GPUs of an NVL72 rack; 4 racks of 64). The rest stay in the
  /// graph, idle. Throws std::invalid_argument when the cluster has fewer such GPUs.
  void keep_job_gpus(const JobShape& shape);

  /// What-ifs on one device or link (instance_override.h). A slowdown applies to a GPU's passes.
  void set_slowdown(DeviceId gpu, double slowdown);
  void set_link_rate(LinkId link, BytesPerSec bandwidth, TimeNs latency);
  /// A software profile's rates (sim/calibration): the GPUs of kind `index` run at `kind`'s numbers.
  void replace_gpu_kind(int index, GpuKind kind);
  /// A copy whose job GPUs are all of kind `index`, those that were of it first (so that ranks 0, 1, ...
  /// sit on that kind's nodes and links), the others after them in order: what a pass costs on that
  /// kind, and a one-kind cluster for rules that look at one axis of a plan on a cluster of several kinds.
  [[nodiscard]] Cluster with_every_gpu_as(int index) const;
  /// The nodes whose job GPUs are of kind `index`, as a cluster of their own: their devices (GPUs of
  /// other kinds left out), the links among what is kept (NVLink, PCIe, NICs and their links to the
  /// fabric), every fabric switch, and that one kind (index 0). Nodes are numbered again from 0 in their
  /// order, in device and link names too (`node2/gpu0` becomes `node0/gpu0`); the job GPUs are the job
  /// GPUs of that kind, in order; slowdowns, link rates and links taken down carry over. What a job on
  /// that kind alone runs on (docs/mixed-clusters.md, "Each kind alone"). O(devices + links). Throws
  /// std::out_of_range when `index` is not a kind of gpu_kinds().
  [[nodiscard]] Cluster only_gpu_kind(int index) const;
  /// The nodes in `nodes` (indices of nodes that hold job GPUs; others are ignored), as a cluster of their
  /// own, cut as only_gpu_kind() cuts one kind's nodes but keeping every GPU kind of them: a part of a
  /// cluster of several kinds (one kind's nodes with some of another's: docs/mixed-clusters.md, "Parts
  /// of the cluster"). The kinds are numbered again in the order the kept GPUs show them. O(devices + links).
  [[nodiscard]] Cluster only_nodes(const std::vector<int>& nodes) const;
  /// Takes the link out of the graph, so no route uses it; it stays in links() marked down.
  void take_link_down(LinkId link);

 private:
  std::vector<Device> devices_;
  std::vector<Link> links_;
  std::vector<GpuKind> gpu_kinds_;
  std::vector<DeviceId> gpus_;
  std::unordered_map<std::string, DeviceId> by_name_;
  std::unique_ptr<ClusterGraph> graph_;  // null only in a moved-from cluster, which has no devices

  /// The job GPUs' nodes in `nodes` with the GPUs of the kinds `kept_kinds` marks (by index), the rest of
  /// those nodes' devices, every fabric device, and the links among them; the shared cut of
  /// only_gpu_kind() and only_nodes().
  [[nodiscard]] Cluster cut(const std::vector<int>& nodes, const std::vector<bool>& kept_kinds) const;
};

}  // namespace mpsim::topology
