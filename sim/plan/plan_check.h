#pragma once
/// Checking a plan against the cluster and model it will run on.
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::plan {

/// Completes `spec` (data degree, microbatch count, balanced partition) and checks it makes sense
/// for `cluster` and `model`: degrees multiply to the GPU count; micro x microbatches x data =
/// global batch; virtual stages divide the layers of a stage; tensor within a node (one NVLink
/// domain) unless forced; heads divisible by tensor; schedule-specific rules. Throws InputError
/// at the offending field, with a message that says how to fix it.
[[nodiscard]] Plan resolve_plan(const PlanSpec& spec, const topology::Cluster& cluster, const model::Model& model);

/// The layers a partition cuts: transformer blocks when the model has them, else every layer.
[[nodiscard]] int partitionable_layer_count(const model::Model& model);

/// Half-open range of indices into Model::layers.
struct LayerRange {
  int first = 0;
  int last = 0;
};

/// The layers of each virtual stage of a complete plan (plan.partition cuts the partitionable
/// layers; the embedding joins the first virtual stage and the output head the last).
[[nodiscard]] std::vector<LayerRange> virtual_stage_layers(const Plan& plan, const model::Model& model);

/// Layer boundaries of `stages` stages over `layers` layers, as even as possible (the first
/// stages take the remainder). The planner's cost-balanced partitioner replaces this.
[[nodiscard]] std::vector<int> even_partition(int layers, int stages);

}  // namespace mpsim::plan
