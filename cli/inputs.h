#pragma once
/// Loading the three inputs of a what-if, with `--set` overrides applied to their YAML first.
#include <optional>
#include <string>
#include <vector>

#include "sim/calibration/software_profile.h"
#include "sim/core/yaml_override.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::cli {

struct InputFiles {
  std::string topology;
  std::string model;
  std::string plan;  ///< may be empty (the planner has none)
  std::string profile;  ///< --profile: a software profile (sim/calibration) applied to the cluster; may be empty
  /// Without --profile, apply the one the topology names (`profile:`); calibrate fits on the catalogue's rates.
  bool topology_profile = true;
};

struct Inputs {
  topology::Cluster cluster;
  model::Model model;
  std::optional<plan::Plan> plan;
  std::optional<calibration::SoftwareProfile> profile;  ///< applied to `cluster` already
};

/// Loads and checks the inputs; a software profile's factors are applied to the cluster before the
/// plan is resolved. Plan shorthands are accepted in overrides: plan.tensor,
/// plan.pipeline, plan.data, plan.virtual_stages (parallelism.*), plan.microbatches (keeps the
/// microbatch size, so the global batch follows), plan.global_batch, plan.micro_batch. For a short-form
/// topology `topology.inter_node.bandwidth` means `topology.cluster.inter_node.bandwidth`; for one
/// with `node_from`, `topology.node.*` changes the included node. An error in an overridden value
/// names the --set flag. Throws InputError.
[[nodiscard]] Inputs load_inputs(const InputFiles& files, const std::vector<Override>& overrides);

/// The topology alone, with the topology overrides applied (as load_inputs reads it). Throws InputError.
[[nodiscard]] topology::Cluster load_cluster(const std::string& topology, const std::vector<Override>& overrides);

/// load_inputs on a cluster built elsewhere (a catalogue's instances): the model (and plan) with their
/// overrides, the profile applied to `cluster`. Topology overrides are not read. Throws InputError.
[[nodiscard]] Inputs load_inputs_on_cluster(const InputFiles& files, const std::vector<Override>& overrides,
                                            topology::Cluster cluster);

/// `--gpus N [--gpus-per-node K]` of plan and simulate.
struct GpuSelection {
  std::optional<int> gpus;           ///< nothing = every GPU of the topology
  std::optional<int> gpus_per_node;  ///< nothing = topology::job_shape's rule
};

/// load_inputs on the GPUs a job of `selection.gpus` GPUs uses (topology::job_shape: whole nodes, the
/// first GPUs of one node, or equal NVLink domains such as 4 racks of 64); the node count becomes the
/// job's. Throws InputError naming the flag when N or K is not positive, K does not divide N or exceeds
/// a node, or the job is larger than the topology (after --set) has GPUs.
[[nodiscard]] Inputs load_inputs_on_gpus(const InputFiles& files, std::vector<Override> overrides,
                                         const GpuSelection& selection);

}  // namespace mpsim::cli
