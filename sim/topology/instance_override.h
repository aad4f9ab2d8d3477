#pragma once
/// What-ifs on one node, GPU or link of the expanded cluster, named as `topo show` names them:
///
///   --set topology.nodes[5].nics.bandwidth="200 Gb/s"    every NIC port of node5 (also .nics.latency)
///   --set topology.nodes[5].slowdown=1.2                 every GPU of node5 takes 1.2x as long
///   --set topology.gpus[node5/gpu3].slowdown=1.25        one GPU
///   --set "topology.links[net:node5/nic3-fabric/leaf3].down=true"   (also .bandwidth, .latency)
///
/// They apply after the topology file is expanded, so they reach a node of a `nodes: 512` file that has
/// no entry of its own. `nodes[i].template` and `nodes[i].count` stay edits of the file's node groups.
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/yaml_override.h"
#include "sim/topology/cluster.h"

namespace mpsim::topology {

/// Whether a topology override's path names a node, GPU or link of the expanded cluster.
[[nodiscard]] bool is_instance_path(std::string_view path);

/// Applies the instance overrides among `overrides` (target topology, is_instance_path) in order.
/// Throws InputError naming the --set flag: an unknown node, GPU, link or field, a bad value, a
/// slowdown outside [1, 100], or a link down that leaves a GPU unreachable.
void apply_instance_overrides(Cluster& cluster, const std::vector<Override>& overrides);

}  // namespace mpsim::topology
