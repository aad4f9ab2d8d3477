#pragma once
/// `nvidia-smi topo -m` text → a one-node TopologySpec. Rules and defaults: docs/formats/import.md.
#include <string_view>

#include "sim/topology/import/import_options.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::topology::import {

/// Builds one node from the matrix:
/// - NVLink: when at least 3 GPUs show NV<n> to every other GPU and each GPU's counts add up to
///   more NVLinks than its kind has, the GPUs meet in one NVSwitch, each linked with its largest
///   n; otherwise every NV<n> pair gets a direct link of n bonded NVLinks. Per-link bandwidth
///   comes from the GPU kind.
/// - CPUs: one per NUMA node: GPUs sharing a `NUMA Affinity` (or `CPU Affinity`) value, and
///   devices that are PIX/PXB/PHB/NODE to each other, share a CPU; a group without affinity joins
///   the first CPU it is not SYS to. Every pair of CPUs is joined by an SMP link.
/// - PCIe: devices that are PIX to each other share a PCIe switch; groups that are PXB to each
///   other hang off one more switch (so that their routes cross several bridges); a device with
///   neither hangs off its CPU. NODE and PHB both become a path through the CPU (class PHB).
///   PCIe links run at the GPU kind's PCIe bandwidth; NICs at ImportOptions::nic_bandwidth.
/// Throws InputError (file, line, column, `row GPU3, column GPU5`) for a malformed matrix, and
/// for NVLink counts the GPU kind cannot have.
[[nodiscard]] TopologySpec import_nvidia_smi_topo(std::string_view text, std::string_view source_name,
                                                  const ImportOptions& options);

}  // namespace mpsim::topology::import
