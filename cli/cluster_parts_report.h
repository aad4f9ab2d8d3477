#pragma once
/// `mpsim plan` on a cluster of several GPU kinds: the fastest kind alone's nodes with some of the other
/// kinds' nodes searched (planner/cluster_parts.h), as text beside the ranking and as the JSON field
/// `cluster_part_alternatives`.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/cluster_parts.h"
#include "planner/search.h"

namespace mpsim::cli {

/// One part, searched or not.
struct ClusterPartSearch {
  planner::ClusterPart part;
  planner::PlannerResult result;  ///< its search; empty when `error` says why it was not searched
  std::string error;              ///< why it has no plan
  [[nodiscard]] const planner::Evaluated* best() const { return result.ranked.empty() ? nullptr : &result.ranked.front(); }
};

/// The lines under each kind alone: each part, its best step and plan or why it has none, against the
/// whole mix's best (`mix_step_s`, nothing when the mix has no plan); a warning for each part faster than
/// the whole mix.
[[nodiscard]] std::string cluster_parts_text(const std::vector<ClusterPartSearch>& parts, std::optional<double> mix_step_s);

/// `cluster_part_alternatives`: one object per part (docs/formats.md, "plan --json").
[[nodiscard]] nlohmann::ordered_json cluster_parts_json(const std::vector<ClusterPartSearch>& parts,
                                                        std::optional<double> mix_step_s);

}  // namespace mpsim::cli
