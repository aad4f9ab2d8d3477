#pragma once
/// A topology as written: node templates, their internal links and the fabric between nodes.
///
/// The YAML loader produces it (keeping each item's source location for later errors), the
/// importers produce it from `nvidia-smi topo -m` and NCCL XML, the writer prints it back as YAML,
/// and build_cluster() expands it into a Cluster.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/topology/cluster.h"
#include "sim/topology/gpu_kind.h"

namespace mpsim::topology {

/// Where a spec item came from, so that expansion errors still name file, line and field.
struct SpecOrigin {
  SourceLocation where;
  std::string field;
};

struct LinkSpec {
  LinkKind kind = LinkKind::NvLink;
  std::vector<std::string> from;  ///< endpoint names or patterns (`gpu3`, `gpu*`, `gpu[0-3]`)
  std::vector<std::string> to;
  std::vector<std::pair<std::string, std::string>> pairs;  ///< explicit endpoint pairs
  BytesPerSec bandwidth;          ///< per link and direction
  int count = 1;                  ///< bonded links: bandwidth is multiplied by count (NV2 = 2)
  TimeNs latency;
  Duplex duplex = Duplex::Full;
  SpecOrigin origin;
};

struct NicSpec {
  int count = 0;
  BytesPerSec bandwidth;          ///< port speed to the fabric, per direction
  TimeNs latency;                 ///< NIC to first switch
};

struct NodeSpec {
  std::string gpu_kind;           ///< catalog id or alias, or a custom kind of this file
  int gpus = 0;
  int cpus = 0;
  int nvswitches = 0;
  int pcie_switches = 0;
  NicSpec nics;
  std::vector<LinkSpec> links;
  SpecOrigin origin;
};

struct NodeGroup {
  std::string template_name;
  int count = 0;
  SpecOrigin origin;
};

enum class FabricKind : std::uint8_t { SingleSwitch, FatTree, RailOptimized };
[[nodiscard]] std::string_view to_string(FabricKind k) noexcept;

struct FabricSpec {
  FabricKind kind = FabricKind::SingleSwitch;
  std::string network = "infiniband";  ///< infiniband | ethernet | roce | efa (descriptive)
  int levels = 1;                      ///< switch levels (fat tree: 2 or 3)
  int leaf_ports = 0;                  ///< NIC ports per leaf switch; 0 = all on one leaf
  int pod_leaves = 0;                  ///< leaves per pod (3-level fat tree)
  double oversubscription = 1.0;       ///< downlink : uplink bandwidth at each level
  TimeNs switch_latency;               ///< per switch-to-switch hop
  SpecOrigin origin;
};

struct TopologySpec {
  std::string name;
  std::string source;                               ///< free text: where the numbers come from
  std::vector<GpuKind> custom_gpu_kinds;
  std::map<std::string, NodeSpec> templates;
  std::vector<NodeGroup> nodes;
  std::optional<FabricSpec> fabric;
  /// `profile:` a software profile (sim/calibration) the cluster's runs take by default, resolved
  /// against the topology file's folder; empty: none. A file that node_from includes brings its node only.
  std::string profile;
  std::string file;                                 ///< for whole-file errors
};

/// The GPU kind `name` names: one of the spec's own kinds, else the built-in catalog; or null.
[[nodiscard]] const GpuKind* find_gpu_kind(const TopologySpec& spec, std::string_view name);

/// Every GPU kind id `find_gpu_kind` knows for `spec`, comma-separated, for error messages.
[[nodiscard]] std::string known_gpu_kinds(const TopologySpec& spec);

/// Expands a spec into the cluster graph: resolves GPU kinds and link endpoints, builds the
/// fabric, and checks that every GPU can reach every other. Throws InputError at the spec item's
/// location on a dangling endpoint, an unknown GPU kind or a disconnected GPU.
[[nodiscard]] Cluster build_cluster(const TopologySpec& spec);

}  // namespace mpsim::topology
