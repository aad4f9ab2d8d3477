#pragma once
/// A search divided over processes (`mpirun -n N mpsim plan`, PlannerOptions::shard): each process's
/// part as text, and the parts read back and merged into the one-process result. The transport (MPI)
/// is the caller's.
#include <string>
#include <string_view>
#include <vector>

#include "planner/search.h"
#include "sim/model/model.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// `mine` as JSON text: every ranked or Pareto plan as its plan file, its report and its estimates, and
/// the search's counts.
[[nodiscard]] std::string shard_part_text(const PlannerResult& mine);

/// Every process's part (shard_part_text), in rank order, merged (merge_shards) into the result one
/// process would have found: each plan resolved again on `cluster` and `model`; the candidate count and
/// the memory pruning are every process's own, the other counts add up; the capacity is `mine`'s; with no
/// plan, the first part's reason. Throws nlohmann::json::exception on text that is not such a part.
[[nodiscard]] PlannerResult merge_shard_parts(const std::vector<std::string_view>& parts, const PlannerResult& mine,
                                              const PlannerOptions& options, const topology::Cluster& cluster,
                                              const model::Model& model);

}  // namespace mpsim::planner
