#pragma once
/// Parts of a cluster of several GPU kinds between one kind alone and the whole mix: that kind's nodes with
/// some of the other kinds' nodes. Where a slower kind's GPUs cost more in communication or imbalance than
/// they add, the best job may use some of them but not all; `mpsim plan` searches these parts as it searches
/// each kind alone (planner/kind_alone.h) and reports them beside the ranking (docs/mixed-clusters.md,
/// "Parts of the cluster").
#include <string>
#include <vector>

#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// One part: the base kind's nodes and the first `added_nodes` of the others'.
struct ClusterPart {
  std::vector<int> nodes;     ///< node indices of the whole cluster, ascending
  int added_nodes = 0;        ///< of those, nodes without a GPU of the base kind
  std::string label;          ///< "16 NVIDIA H100 SXM 80GB + 8 NVIDIA A100 SXM4 80GB": job GPUs by kind
  topology::Cluster cluster;  ///< those nodes alone (Cluster::only_nodes)
};

/// The parts between kind `base_kind`'s nodes (index into cluster.gpu_kinds()) and the whole cluster: the
/// nodes with a job GPU of that kind, plus the first n of the other nodes with job GPUs (in node order),
/// for n = 1 .. m - 1 of those m nodes; when m - 1 exceeds `most`, `most` values of n spread evenly over
/// that range (n_i = round(i m / (most + 1)), each once). Empty on a cluster of one kind, when the other
/// kinds have one node or none, or when `most` < 1. O(most x (devices + links)).
[[nodiscard]] std::vector<ClusterPart> cluster_parts(const topology::Cluster& cluster, int base_kind, int most);

/// How many parts `mpsim plan` searches at most: each is a search as long as the mix's.
inline constexpr int kMostClusterParts = 3;

}  // namespace mpsim::planner
