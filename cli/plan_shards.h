#pragma once
/// `mpirun -n N mpsim plan ...`: the search divided over the job's processes (PlannerOptions::shard),
/// their parts (planner/shard_parts.h) gathered on rank 0 over MPI and merged into the one-process result.
#include "planner/search.h"
#include "sim/model/model.h"
#include "sim/topology/cluster.h"

namespace mpsim::cli {

/// Rank 0 gets the whole result; the other ranks get an empty one (they print nothing). Each part
/// travels as its text (planner::shard_part_text) and is read back on rank 0 (planner::merge_shard_parts:
/// each plan resolved again on the same cluster and model).
[[nodiscard]] planner::PlannerResult gather_shards(const planner::PlannerResult& mine, const planner::PlannerOptions& options,
                                                   const topology::Cluster& cluster, const model::Model& model, int rank,
                                                   int ranks);

}  // namespace mpsim::cli
