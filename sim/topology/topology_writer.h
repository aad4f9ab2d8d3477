#pragma once
/// TopologySpec → topology YAML (the full form of docs/formats.md).
///
/// The importers produce a TopologySpec; this prints it as a file users read and edit, and that
/// load_topology_spec() reads back to an equivalent spec: the same devices, and links with the
/// same endpoints, bandwidth, count, latency and duplex. Quantities are written as people write
/// them ("25 GB/s", "200 Gb/s", "0.5 us", "80 GiB"); a value that a short form would round is
/// written in its base unit ("12345678901.5 B/s") so that nothing drifts across a round trip.
#include <string>

#include "sim/topology/topology_spec.h"

namespace mpsim::topology {

/// The whole document, starting with a comment header (name and `source` lines). Pure: no I/O.
/// A single template named `node` used by one node group is written as `node:` + `nodes: N`;
/// anything else as `node_templates:` + `nodes: [{template, count}]`.
[[nodiscard]] std::string write_topology_yaml(const TopologySpec& spec);

}  // namespace mpsim::topology
