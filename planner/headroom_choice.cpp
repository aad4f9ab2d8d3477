#include "planner/headroom_choice.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <tuple>

#include "planner/equivalent_plans.h"
#include "planner/memory_margin.h"

namespace mpsim::planner {

std::int64_t memory_headroom(const trace::Report& report) noexcept {
  std::int64_t least = std::numeric_limits<std::int64_t>::max();
  for (const trace::DeviceReport& d : report.devices) least = std::min(least, d.memory_capacity_bytes - d.peak_memory_bytes);
  return report.devices.empty() ? -report.peak_memory_bytes : least;
}

bool safe_from_worst_memory_error(const trace::Report& report) noexcept {
  return !report.devices.empty() && std::all_of(report.devices.begin(), report.devices.end(), [](const trace::DeviceReport& d) {
    return static_cast<double>(d.peak_memory_bytes) / (1 - kWorstMeasuredUnderPrediction) <=
           static_cast<double>(d.memory_capacity_bytes);
  });
}

bool has_more_headroom(const trace::Report& a, const trace::Report& b) noexcept {
  const auto smallest_memory = [](const trace::Report& r) {
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    for (const trace::DeviceReport& d : r.devices) least = std::min(least, d.memory_capacity_bytes);
    return r.devices.empty() ? std::int64_t{0} : least;
  };
  const double equal_within =
      kEquivalentHeadroomShare * static_cast<double>(std::min(smallest_memory(a), smallest_memory(b)));
  return static_cast<double>(memory_headroom(a) - memory_headroom(b)) > equal_within;
}

int moving_parts(const plan::Plan& plan) noexcept {
  int parts = 0;
  for (const plan::Axis axis : {plan::Axis::Tensor, plan::Axis::Context, plan::Axis::Expert, plan::Axis::Pipeline}) {
    if (plan.degrees[axis] > 1) ++parts;
  }
  if (plan.virtual_stages > 1) ++parts;
  if (plan.recompute != plan::Recompute::None) ++parts;
  if (plan.zero > 0) ++parts;
  return parts;
}

std::optional<HeadroomChoice> choose_for_headroom(const std::vector<Evaluated>& ranked,
                                                  const std::vector<Evaluated>& front, double tolerance) {
  if (ranked.empty() || tolerance <= 0) return std::nullopt;
  const Evaluated& fastest = ranked.front();
  const double limit_s = fastest.report.step_time_s * (1 + tolerance);
  std::vector<const Evaluated*> within;
  for (const auto* list : {&ranked, &front}) {
    for (const Evaluated& e : *list) {
      const bool seen = std::any_of(within.begin(), within.end(), [&](const Evaluated* w) { return w->id == e.id; });
      if (!seen && e.report.step_time_s <= limit_s) within.push_back(&e);
    }
  }
  std::vector<const Evaluated*> safe;
  std::copy_if(within.begin(), within.end(), std::back_inserter(safe),
               [](const Evaluated* e) { return safe_from_worst_memory_error(e->report); });
  std::vector<const Evaluated*> pool = safe.empty() ? within : safe;
  if (!safe.empty()) {
    // The fastest safe plans: those within kEquivalentStepShare of the fastest of them.
    const double fastest_safe_s = (*std::min_element(safe.begin(), safe.end(), [](const Evaluated* a, const Evaluated* b) {
                                    return a->report.step_time_s < b->report.step_time_s;
                                  }))->report.step_time_s;
    std::erase_if(pool, [&](const Evaluated* e) {
      return e->report.step_time_s > fastest_safe_s * (1 + kEquivalentStepShare);
    });
  }
  // Whether `a` goes before `b`: more headroom by more than kEquivalentHeadroomShare, else fewer moving
  // parts, then the faster, then the first found.
  const auto before = [](const Evaluated* a, const Evaluated* b) {
    if (has_more_headroom(a->report, b->report)) return true;
    if (has_more_headroom(b->report, a->report)) return false;
    return std::make_tuple(moving_parts(a->plan), a->report.step_time_s, a->id) <
           std::make_tuple(moving_parts(b->plan), b->report.step_time_s, b->id);
  };
  // A scan, not a sort: with headroom equal within a share the order is not transitive, and the scan's
  // answer depends only on the candidates' order, which is the search's (deterministic).
  const Evaluated* best = pool.front();
  for (const Evaluated* e : pool) {
    if (before(e, best)) best = e;
  }
  if (best->id == fastest.id) return std::nullopt;
  return HeadroomChoice{*best, fastest, tolerance, within.size()};
}

void put_first(std::vector<Evaluated>& ranked, const HeadroomChoice& choice) {
  const auto at = std::find_if(ranked.begin(), ranked.end(), [&](const Evaluated& e) { return e.id == choice.chosen.id; });
  if (at != ranked.end()) {
    std::rotate(ranked.begin(), at, at + 1);
    return;
  }
  ranked.insert(ranked.begin(), choice.chosen);
  ranked.pop_back();
}

}  // namespace mpsim::planner
