#pragma once
/// Which GPUs of a cluster a job of N GPUs runs on: how many nodes, and how many GPUs of each.
///
/// A job that fills whole nodes uses them all. A job smaller than a node takes the first GPUs of one
/// node (8 GPUs of an NVL72 rack). A larger job fills nodes in order when that keeps its power-of-two
/// groups inside nodes (12 GPUs of 8-GPU nodes: 8 + 4); otherwise it runs as equal NVLink domains, the
/// way power-of-two jobs are placed on 72-GPU racks (Slurm's block topology, `--segment`, which the
/// Megatron-Bridge launcher sets): 256 GPUs run as 4 racks of 64, not 3 full racks and 40 GPUs of a
/// fourth, so that every tensor, expert and context group of up to 64 GPUs stays in one rack.
#include <optional>
#include <string>

namespace mpsim::topology {

struct JobShape {
  int nodes = 1;
  int gpus_per_node = 1;  ///< the first this many GPUs of each node (the last node may hold fewer)
  int gpus = 1;
};

/// The shape of a `gpus`-GPU job on nodes of `node_gpus` GPUs; `gpus_per_node` overrides the rule
/// above. Preconditions: job_shape_error(...) is empty.
[[nodiscard]] JobShape job_shape(int gpus, int node_gpus, std::optional<int> gpus_per_node = std::nullopt);
/// Why the request cannot be laid out (GPUs per node larger than a node, or not dividing the job), or nothing.
[[nodiscard]] std::optional<std::string> job_shape_error(int gpus, int node_gpus, std::optional<int> gpus_per_node);

}  // namespace mpsim::topology
