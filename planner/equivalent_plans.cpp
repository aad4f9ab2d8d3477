#include "planner/equivalent_plans.h"

#include <algorithm>
#include <cmath>

namespace mpsim::planner {
namespace {

template <typename T>
void add_once(std::vector<T>& values, const T& value) {
  if (std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
}

/// "a / b": the names of `values` in their order.
template <typename T>
std::string joined(const std::vector<T>& values) {
  std::string out;
  for (const T& v : values) {
    if (!out.empty()) out += " / ";
    out += plan::to_string(v);
  }
  return out;
}

}  // namespace

bool equivalent(const Evaluated& a, const Evaluated& b) {
  plan::Plan a_plan = a.plan;
  a_plan.placement = b.plan.placement;
  if (a.plan.degrees[plan::Axis::Pipeline] == 1 && b.plan.degrees[plan::Axis::Pipeline] == 1) {
    a_plan.schedule = b.plan.schedule;
    a_plan.virtual_stages = b.plan.virtual_stages;
  }
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
        add_once(group.placements, e.plan.placement);
        add_once(group.schedules, e.plan.schedule);
        merged = true;
        break;
      }
    }
    if (!merged) out.push_back({e, {e.plan.placement}, {e.plan.schedule}});
  }
  return out;
}

std::string placements_text(const EquivalentPlans& plans) { return joined(plans.placements); }

std::string schedules_text(const EquivalentPlans& plans) { return joined(plans.schedules); }

}  // namespace mpsim::planner
