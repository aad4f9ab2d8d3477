#pragma once
/// Topology YAML → TopologySpec → Cluster. The schema is documented in docs/formats.md, "Topology".
#include <filesystem>
#include <functional>

#include "sim/core/yaml_field_fwd.h"
#include "sim/topology/cluster.h"
#include "sim/topology/topology_spec.h"

namespace mpsim::topology {

/// Reads either the full form (`node`/`node_templates`, `nodes`, `fabric`) or the short form
/// (`cluster: {nodes, gpus_per_node, gpu, intra_node, inter_node}`). `node_from` paths are relative to
/// the file; `depth` counts nested `node_from` files. Throws InputError.
/// `patch_included` may change a `node_from` file's document before it is read (what-if overrides).
[[nodiscard]] TopologySpec load_topology_spec(const Field& root, int depth = 0,
                                              const std::function<void(YamlDocument&)>& patch_included = {});

/// A `fabric:` mapping as a topology file writes it (docs/formats.md, "Topology"); a catalogue entry's
/// `fabric` reads the same way. Throws InputError.
[[nodiscard]] FabricSpec load_fabric_spec(const Field& fabric);

/// Loads and expands a topology file. Throws InputError.
[[nodiscard]] Cluster load_topology_file(const std::filesystem::path& path);

}  // namespace mpsim::topology
