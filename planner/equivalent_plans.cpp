#include "planner/equivalent_plans.h"

#include <algorithm>
#include <cmath>

namespace mpsim::planner {

bool equivalent(const Evaluated& a, const Evaluated& b) {
  plan::Plan a_plan = a.plan;
  a_plan.placement = b.plan.placement;
  const double slower = std::max(a.report.step_time_s, b.report.step_time_s);
  return a_plan == b.plan && a.report.peak_memory_bytes == b.report.peak_memory_bytes &&
         std::abs(a.report.step_time_s - b.report.step_time_s) <= kEquivalentStepShare * slower;
}

std::vector<EquivalentPlans> merge_equivalent(const std::vector<Evaluated>& ranked) {
  std::vector<EquivalentPlans> out;
  for (const Evaluated& e : ranked) {
    bool merged = false;
    for (EquivalentPlans& group : out) {
      if (equivalent(group.plan, e)) {
        group.placements.push_back(e.plan.placement);
        merged = true;
        break;
      }
    }
    if (!merged) out.push_back({e, {e.plan.placement}});
  }
  return out;
}

std::string placements_text(const EquivalentPlans& plans) {
  std::string out;
  for (const plan::Placement& p : plans.placements) {
    if (!out.empty()) out += " / ";
    out += plan::to_string(p);
  }
  return out;
}

}  // namespace mpsim::planner
