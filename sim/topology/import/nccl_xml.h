#pragma once
/// NCCL's topology dump (`NCCL_TOPO_DUMP_FILE`, the `<system version="1">` XML) → a one-node
/// TopologySpec. Rules and defaults: docs/formats/import.md.
#include <string_view>

#include "sim/topology/import/import_options.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::topology::import {

/// Builds one node from the XML tree, the way NCCL's ncclTopoGetSystemFromXml reads it:
/// - `<cpu>`: one CPU each; every pair is joined by an SMP link at NCCL's figure for the CPU model.
/// - `<pci>` with a `<gpu>` child: a GPU; with a `<nic>` child: one NIC per `<net>`; any other
///   `<pci>` (class 0x0604 bridges) that has GPUs or NICs below it: a PCIe switch. Each links to
///   its parent at `link_speed` x `link_width` (see pcie_link()). A `<nic>` directly under `<cpu>`
///   links to the CPU at its port speed.
/// - `<nvlink tclass="0x03....">` to another GPU's busid: a direct link of `count` NVLinks;
///   any other non-CPU tclass (0x068000, NVSwitch): all are one NVSwitch per node, each GPU linked
///   with its summed count. Per-link bandwidth comes from the GPU kind. NVLinks to CPUs (0x068001)
///   and to GPUs not in the file are left out.
/// - GPU kind: ImportOptions::gpu_kind, else the one built-in kind of the GPUs' `sm`.
/// GPUs and NICs are numbered by their `dev` attribute when those are 0..n-1, else in file order.
/// Throws InputError (file, line, column, element path) for malformed XML, missing or bad
/// attributes, an ambiguous or unknown GPU kind, or more NVLinks than the GPU kind has.
[[nodiscard]] TopologySpec import_nccl_xml(std::string_view text, std::string_view source_name,
                                           const ImportOptions& options);

}  // namespace mpsim::topology::import
