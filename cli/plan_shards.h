#pragma once
/// `mpirun -n N mpsim plan ...`: the search divided over the job's processes (PlannerOptions::shard),
/// their parts gathered on rank 0 and merged into the one-process result (planner::merge_shards).
#include "planner/search.h"
#include "sim/model/model.h"
#include "sim/topology/cluster.h"

namespace mpsim::cli {

/// Rank 0 gets the whole result; the other ranks get an empty one (they print nothing). Each part
/// travels as JSON: every ranked or Pareto plan as its plan file and its report, read back on rank 0
/// (the plan resolved again on the same cluster and model).
[[nodiscard]] planner::PlannerResult gather_shards(const planner::PlannerResult& mine, const planner::PlannerOptions& options,
                                                   const topology::Cluster& cluster, const model::Model& model, int rank,
                                                   int ranks);

}  // namespace mpsim::cli
