#pragma once
/// `mpsim plan` on a cluster of several GPU kinds: each kind's nodes searched alone (planner/kind_alone.h),
/// as text beside the ranking and as the JSON fields `single_kind_alternatives` and `fastest`.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cluster_parts_report.h"
#include "planner/kind_alone.h"
#include "planner/search.h"
#include "sim/plan/plan.h"

namespace mpsim::cli {

/// One kind alone, searched or not.
struct KindAloneSearch {
  planner::KindAlone kind;
  planner::PlannerResult result;  ///< its search; empty when `error` says why it was not searched
  std::string error;              ///< why it has no plan: the search's reason, or why it was not searched
  std::optional<planner::AgainstMix> against_mix;  ///< when it and the mix both have a plan
  [[nodiscard]] const planner::Evaluated* best() const { return result.ranked.empty() ? nullptr : &result.ranked.front(); }
};

/// "TP 2 x PP 1 x DP 4, mb 2 x 8, 1f1b, recompute none, zero 1": a plan in one line, its degrees as
/// every report names them (plan::summary).
[[nodiscard]] std::string plan_summary(const plan::Plan& p);

/// A part of the cluster's best plan in its JSON object (`entry`): `best_step_time_s` and either `error`
/// (no plan) or `peak_memory_bytes`, `mfu`, `plan_summary` and `plan`.
void add_best_plan_json(nlohmann::ordered_json& entry, const planner::Evaluated* best, const std::string& error);

/// The lines under the ranking: each kind alone, its best step and plan or why it has none, how much
/// faster the mix is; and a warning for each kind alone that is faster than the mix, with why.
/// `mix_has_plan`: whether the mix has a best plan.
[[nodiscard]] std::string kinds_alone_text(const std::vector<KindAloneSearch>& kinds, bool mix_has_plan);

/// `single_kind_alternatives`: one object per kind (docs/formats.md, "plan --json").
[[nodiscard]] nlohmann::ordered_json kinds_alone_json(const std::vector<KindAloneSearch>& kinds);

/// `fastest`: "mix", the id of the kind whose nodes alone have the fastest best plan, or the `label` of
/// the part of the cluster (cluster_parts_report.h) that has it; null when nothing has a plan. Only a
/// strictly faster step displaces: of equals the mix, then the first kind, then the first part stays.
/// `mix_step_s`: the mix's fastest step, nothing when it has no plan.
[[nodiscard]] nlohmann::ordered_json fastest_json(const std::vector<KindAloneSearch>& kinds,
                                                  const std::vector<ClusterPartSearch>& parts,
                                                  std::optional<double> mix_step_s);

}  // namespace mpsim::cli
