#pragma once
/// The part every importer shares: naming the devices of one node, collecting its links, and
/// turning them into a one-node TopologySpec that reads well when written out.
#include <string>
#include <string_view>
#include <vector>

#include "sim/topology/import/import_options.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::topology::import {

/// Builds the single node template `node` of an imported topology. Device names follow
/// docs/formats.md, "Full form" (`gpu3`, `nvswitch0`, `pcie-switch2`, `cpu1`, `nic7`), numbered in
/// the order they are added.
class NodeBuilder {
 public:
  NodeBuilder(std::string gpu_kind, int gpus, SpecOrigin origin);

  [[nodiscard]] static std::string gpu(int index);
  /// Adds a device and returns its local name.
  [[nodiscard]] std::string add_cpu();
  [[nodiscard]] std::string add_pcie_switch();
  [[nodiscard]] std::string add_nvswitch();
  [[nodiscard]] std::string add_nic();

  [[nodiscard]] int cpus() const noexcept { return node_.cpus; }
  [[nodiscard]] int nics() const noexcept { return node_.nics.count; }

  /// One link from `device` to `upstream` (a switch or CPU), or between two GPUs; `bandwidth` is
  /// per link and direction, `count` bonded links (NV12 = 12).
  void add_link(LinkKind kind, std::string device, std::string upstream, BytesPerSec bandwidth, int count,
                SpecOrigin origin);
  /// Joins every pair of CPUs with an SMP link, as NCCL does (ncclTopoConnectCpus).
  void connect_cpus(BytesPerSec bandwidth, const SpecOrigin& origin);

  /// The finished spec: one node group of one node, no fabric. Throws InputError at the node's
  /// origin when a device count exceeds what the topology loader accepts (so that what is
  /// imported can always be written and read back). Links that share their upstream
  /// end, kind and numbers become one `from: [...]` entry (`gpu*` when it lists every GPU); direct
  /// GPU-to-GPU links become `pairs`. Order: NVLink, device PCIe links, switch uplinks, SMP.
  [[nodiscard]] TopologySpec finish(std::string name, std::string source, BytesPerSec nic_bandwidth,
                                    std::string file) &&;

 private:
  struct Edge {
    LinkKind kind;
    std::string device;
    std::string upstream;
    BytesPerSec bandwidth;
    int count;
    SpecOrigin origin;
  };
  NodeSpec node_;
  std::vector<Edge> edges_;
};

/// The built-in kind `id` names. Throws InputError at `where`, listing the known kinds, when `id`
/// is empty (`why_needed` says why the input needs one) or unknown.
[[nodiscard]] const GpuKind& resolve_gpu_kind(std::string_view id, const SourceLocation& where,
                                              std::string_view why_needed);

/// A NIC port speed as people write it: "200 Gb/s", "12.5 Gb/s".
[[nodiscard]] std::string port_speed_text(BytesPerSec speed);

/// ImportOptions::name, or the file name of `source_name` without directories and extensions.
[[nodiscard]] std::string spec_name(std::string_view source_name, const ImportOptions& options);

}  // namespace mpsim::topology::import
