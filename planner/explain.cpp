#include "planner/explain.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "planner/lower_bound.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_fields.h"
#include "sim/plan/plan_json.h"
#include "sim/schedule/program.h"

namespace mpsim::planner {
namespace {

std::string signed_seconds(double s) {
  return fmt::format("{}{}", s >= 0 ? "+" : "-", to_string(TimeNs::seconds(std::fabs(s))));
}

}  // namespace

TimeBreakdown breakdown(const topology::Cluster& cluster, const model::Model& model, const Evaluated& e) {
  const plan::Plan& p = e.plan;
  const trace::Report& r = e.report;
  TimeBreakdown out;
  out.step_s = r.step_time_s;
  // The busiest pipeline rank (its devices all report the same numbers). The time its stream waited on
  // in-layer collectives is exposed communication, not compute.
  double busiest = -1;
  double waiting = 0;
  for (const trace::DeviceReport& d : r.devices) {
    if (d.busy_s > busiest) {
      busiest = d.busy_s;
      waiting = d.communication_wait_s;
      out.stage = d.stage;
    }
  }
  out.compute_s = std::max(0.0, busiest - waiting);

  const plan::Layout layout(p);
  const engine::CostModel costs = engine::build_cost_model(cluster, model, p, layout);
  std::vector<StageTimes> stages(static_cast<std::size_t>(p.stages()));
  for (int rank = 0; rank < p.degrees[plan::Axis::Pipeline]; ++rank) {
    for (int c = 0; c < p.virtual_stages; ++c) {
      // The passes' compute alone: their in-layer collectives are waits, counted as exposed communication
      // above, so the bound is the schedule's with free communication.
      const engine::ChunkCost& cc = costs.chunk(rank, c);
      stages[static_cast<std::size_t>(plan::virtual_stage_of(p.schedule, p.degrees[plan::Axis::Pipeline], rank, c))] = {
          cc.forward, cc.backward, cc.backward_input, cc.backward_weight};
    }
  }
  const double bound = step_time_lower_bound(schedule::shape_of(p), stages).to_seconds();
  out.bubble_s = std::clamp(std::min(bound, out.step_s) - out.compute_s, 0.0, out.step_s - out.compute_s);
  out.exposed_communication_s = std::max(0.0, out.step_s - out.compute_s - out.bubble_s);
  return out;
}

namespace {

/// "tensor 8 vs 4", "overlap.grad_reduce true vs false": each leaf of two plan objects that differs, by
/// its path (the parallel degrees by their own names).
void plan_differences(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, const std::string& path,
                      std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (const auto& [key, value] : a.items()) {
      const std::string child = path.empty() || path == "parallelism" ? key : path + "." + key;
      plan_differences(value, b.contains(key) ? b.at(key) : nlohmann::ordered_json(), child, out);
    }
    for (const auto& [key, value] : b.items()) {
      if (!a.contains(key)) plan_differences(nlohmann::ordered_json(), value, path.empty() ? key : path + "." + key, out);
    }
    return;
  }
  if (a == b) return;
  const auto text = [](const nlohmann::ordered_json& v) {
    if (v.is_null()) return std::string("unset");
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
      std::vector<std::string> items;
      for (const auto& item : v) items.push_back(item.is_string() ? item.get<std::string>() : item.dump());
      return fmt::format("[{}]", fmt::join(items, ", "));
    }
    return v.dump();
  };
  out.push_back(fmt::format("{} {} vs {}", path, text(a), text(b)));
}

/// Whether the plan field `name` (as plan_differences names it) can change a step of `model`: a model
/// without experts runs the same whatever its expert degrees and MoE settings say.
bool can_matter(std::string_view name, const model::Model& model) {
  if (model.shape && model.shape->moe) return true;
  const plan::PlanField* field = plan::plan_field(name);
  if (field == nullptr) field = plan::plan_field("parallelism." + std::string(name));
  if (field == nullptr) return true;
  const bool expert_degree = field->axis == plan::Axis::Expert || field->axis == plan::Axis::ExpertTensor;
  const bool moe_setting = field->path.find("moe_") != std::string_view::npos || field->path == "routing_imbalance";
  return !expert_degree && !moe_setting;
}

}  // namespace

Comparison compare(const topology::Cluster& cluster, const model::Model& model, const Evaluated& winner,
                   const Evaluated& other) {
  return compare(cluster, cluster, model, winner, other);
}

Comparison compare(const topology::Cluster& winner_cluster, const topology::Cluster& other_cluster,
                   const model::Model& model, const Evaluated& winner, const Evaluated& other) {
  Comparison out;
  const plan::Plan& a = winner.plan;
  const plan::Plan& b = other.plan;
  // Every field of the plan file that differs, from the plan's JSON (which the plan-field table writes),
  // so that a field added there is named here without an edit.
  plan_differences(plan::plan_json(a), plan::plan_json(b), "", out.differences);
  std::erase_if(out.differences, [&](const std::string& difference) {
    return !can_matter(std::string_view(difference).substr(0, difference.find(' ')), model);
  });
  out.winner = breakdown(winner_cluster, model, winner);
  out.other = breakdown(other_cluster, model, other);
  const double gaps[] = {out.other.compute_s - out.winner.compute_s, out.other.bubble_s - out.winner.bubble_s,
                         out.other.exposed_communication_s - out.winner.exposed_communication_s};
  const char* names[] = {"compute", "bubble", "exposed communication"};
  std::size_t largest = 0;
  for (std::size_t i = 1; i < 3; ++i) {
    if (gaps[i] > gaps[largest]) largest = i;
  }
  const double step_gap = out.other.step_s - out.winner.step_s;
  if (std::fabs(step_gap) < 1e-9) {
    const auto memory_gap = other.report.peak_memory_bytes - winner.report.peak_memory_bytes;
    out.main_reason = memory_gap != 0 ? fmt::format("peak memory {}{}", memory_gap > 0 ? "+" : "-",
                                                    to_string(Bytes::bytes(std::llabs(memory_gap))))
                                      : "a tie: the earlier candidate in the search order is listed first";
  } else {
    out.main_reason = fmt::format("{} {}", names[largest], signed_seconds(gaps[largest]));
  }
  return out;
}

}  // namespace mpsim::planner
