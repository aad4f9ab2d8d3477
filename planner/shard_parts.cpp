#include "planner/shard_parts.h"

#include <nlohmann/json.hpp>

#include "sim/core/yaml_field.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/trace/trace_json.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::planner {

std::string shard_part_text(const PlannerResult& mine) {
  nlohmann::json plans = nlohmann::json::array();
  for (const auto* list : {&mine.ranked, &mine.pareto}) {
    for (const Evaluated& e : *list) {
      plans.push_back({{"id", e.id},
                       {"plan", plan::write_plan_yaml(e.plan)},
                       {"report", trace::report_json(e.report)},
                       {"lower_bound_ns", e.estimate.lower_bound.base()},
                       {"peak_memory_estimate", e.estimate.peak_memory.count()}});
    }
  }
  const SearchStats& s = mine.stats;
  const nlohmann::json part{{"plans", plans},
                            {"stats", {s.candidates, s.evaluated, s.pruned_memory, s.pruned_bound, s.pruned_invalid, s.pruned_framework,
                                       s.within_margin}},
                            {"infeasible", mine.infeasible}};
  return part.dump();
}

PlannerResult merge_shard_parts(const std::vector<std::string_view>& parts, const PlannerResult& mine,
                                const PlannerOptions& options, const topology::Cluster& cluster,
                                const model::Model& model) {
  std::vector<Evaluated> candidates;
  SearchStats stats;
  std::string infeasible;
  for (const std::string_view text : parts) {
    const nlohmann::json part = nlohmann::json::parse(text);
    for (const nlohmann::json& p : part.at("plans")) {
      Evaluated e;
      e.id = p.at("id").get<std::size_t>();
      const YamlDocument doc = YamlDocument::parse(p.at("plan").get<std::string>(), "shard plan");
      e.plan = plan::resolve_plan(plan::load_plan_spec(doc.root()), cluster, model);
      e.report = trace::parse_report(p.at("report"));
      e.estimate.lower_bound = TimeNs::ns(p.at("lower_bound_ns").get<std::int64_t>());
      e.estimate.peak_memory = Bytes::bytes(p.at("peak_memory_estimate").get<std::int64_t>());
      candidates.push_back(std::move(e));
    }
    const auto& s = part.at("stats");
    stats.candidates = s.at(0).get<std::size_t>();  // every process enumerates the whole space
    stats.evaluated += s.at(1).get<std::size_t>();
    stats.pruned_memory = s.at(2).get<std::size_t>();  // the same before the space is divided
    stats.pruned_bound += s.at(3).get<std::size_t>();
    stats.pruned_invalid += s.at(4).get<std::size_t>();
    stats.pruned_framework += s.at(5).get<std::size_t>();
    stats.within_margin = s.at(6).get<std::size_t>();  // the same before the space is divided
    if (infeasible.empty()) infeasible = part.at("infeasible").get<std::string>();
  }
  PlannerResult merged = merge_shards(std::move(candidates), stats, options);
  merged.capacity = mine.capacity;
  merged.usable = mine.usable;
  merged.within_margin = mine.within_margin;  // every process searches all of those (run_planner)
  if (merged.ranked.empty()) merged.infeasible = infeasible;
  return merged;
}

}  // namespace mpsim::planner
