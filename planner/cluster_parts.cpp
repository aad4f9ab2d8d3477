#include "planner/cluster_parts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpsim::planner {
namespace {

/// The numbers of added nodes: 1 .. m - 1, or `most` of them spread evenly.
std::vector<int> added_counts(int m, int most) {
  std::set<int> counts;
  if (m - 1 <= most) {
    for (int n = 1; n < m; ++n) counts.insert(n);
  } else {
    for (int i = 1; i <= most; ++i) {
      const int n = static_cast<int>(std::lround(static_cast<double>(i) * m / (most + 1)));
      counts.insert(std::clamp(n, 1, m - 1));
    }
  }
  return {counts.begin(), counts.end()};
}

/// "16 NVIDIA H100 SXM 80GB + 8 NVIDIA A100 SXM4 80GB": the part's job GPUs by kind, in the order they show them.
std::string label_of(const topology::Cluster& part) {
  std::vector<std::string> terms;
  for (const int kind : part.job_gpu_kinds()) {
    const auto count = std::count_if(part.gpus().begin(), part.gpus().end(),
                                     [&](topology::DeviceId g) { return part.device(g).gpu_kind == kind; });
    terms.push_back(fmt::format("{} {}", count, part.gpu_kinds()[static_cast<std::size_t>(kind)].name));
  }
  return fmt::format("{}", fmt::join(terms, " + "));
}

}  // namespace

std::vector<ClusterPart> cluster_parts(const topology::Cluster& cluster, int base_kind, int most) {
  if (most < 1 || cluster.job_gpu_kinds().size() < 2) return {};
  // Nodes with a job GPU of the base kind, and the others with job GPUs, each in node order.
  std::set<int> base;
  std::set<int> others;
  for (const topology::DeviceId g : cluster.gpus()) {
    const topology::Device& d = cluster.device(g);
    if (d.gpu_kind == base_kind) base.insert(d.node);
  }
  for (const topology::DeviceId g : cluster.gpus()) {
    const int node = cluster.device(g).node;
    if (!base.contains(node)) others.insert(node);
  }
  if (base.empty()) return {};
  const std::vector<int> other_nodes(others.begin(), others.end());
  std::vector<ClusterPart> parts;
  for (const int n : added_counts(static_cast<int>(other_nodes.size()), most)) {
    std::set<int> nodes = base;
    nodes.insert(other_nodes.begin(), other_nodes.begin() + n);
    ClusterPart part;
    part.nodes.assign(nodes.begin(), nodes.end());
    part.added_nodes = n;
    part.cluster = cluster.only_nodes(part.nodes);
    part.label = label_of(part.cluster);
    parts.push_back(std::move(part));
  }
  return parts;
}

}  // namespace mpsim::planner
