#include "sim/topology/job_shape.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace mpsim::topology {
namespace {

/// The largest power of two dividing `gpus` that fits a node: the largest group size a
/// power-of-two parallel layout aligns to (tensor, expert, context groups).
int aligned_group(int gpus, int node_gpus) noexcept {
  int group = 1;
  while (gpus % (2 * group) == 0 && 2 * group <= node_gpus) group *= 2;
  return group;
}

/// GPUs per node for a job larger than a node that does not fill whole nodes. Filling nodes in order
/// keeps aligned groups whole when the node size is a multiple of them (12 GPUs of 8-GPU nodes: 8 + 4).
/// Otherwise the job runs as equal domains of the largest divisor of `gpus` that fits a node and holds
/// whole aligned groups (256 GPUs of 72-GPU racks: 4 x 64; the Megatron-Bridge launcher's
/// `--segment` gives the same for its 4-GPU trays).
int gpus_per_domain(int gpus, int node_gpus) noexcept {
  const int group = aligned_group(gpus, node_gpus);
  if (node_gpus % group == 0) return node_gpus;
  for (int size = node_gpus / group * group; size >= group; size -= group) {
    if (gpus % size == 0) return size;
  }
  return node_gpus;
}
}  // namespace

std::optional<std::string> job_shape_error(int gpus, int node_gpus, std::optional<int> gpus_per_node) {
  if (gpus < 1) return "must be a positive number of GPUs";
  if (node_gpus < 1) return "the topology's nodes have no GPUs";
  if (!gpus_per_node) return std::nullopt;
  if (*gpus_per_node < 1 || *gpus_per_node > node_gpus) {
    return fmt::format("GPUs per node must be between 1 and the node's {}", node_gpus);
  }
  if (gpus > *gpus_per_node && gpus % *gpus_per_node != 0) {
    return fmt::format("{} GPUs per node do not divide a job of {} GPUs", *gpus_per_node, gpus);
  }
  return std::nullopt;
}

JobShape job_shape(int gpus, int node_gpus, std::optional<int> gpus_per_node) {
  if (auto why = job_shape_error(gpus, node_gpus, gpus_per_node)) throw std::invalid_argument(*why);
  int per_node = node_gpus;
  if (gpus_per_node) {
    per_node = *gpus_per_node;
  } else if (gpus <= node_gpus) {
    per_node = gpus;
  } else if (gpus % node_gpus != 0) {
    per_node = gpus_per_domain(gpus, node_gpus);
  }
  per_node = std::min(per_node, gpus);
  return JobShape{(gpus + per_node - 1) / per_node, per_node, gpus};
}

}  // namespace mpsim::topology
