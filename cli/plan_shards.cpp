#include "cli/plan_shards.h"

#include <mpi.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/yaml_field.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/trace/trace_json.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

nlohmann::json part_json(const planner::PlannerResult& mine) {
  nlohmann::json plans = nlohmann::json::array();
  for (const auto* list : {&mine.ranked, &mine.pareto}) {
    for (const planner::Evaluated& e : *list) {
      plans.push_back({{"id", e.id},
                       {"plan", plan::write_plan_yaml(e.plan)},
                       {"report", trace::report_json(e.report)},
                       {"lower_bound_ns", e.estimate.lower_bound.base()},
                       {"peak_memory_estimate", e.estimate.peak_memory.count()}});
    }
  }
  const planner::SearchStats& s = mine.stats;
  return {{"plans", plans},
          {"stats", {s.candidates, s.evaluated, s.pruned_memory, s.pruned_bound, s.pruned_invalid}},
          {"infeasible", mine.infeasible}};
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw std::runtime_error(std::string("MPI ") + what + " failed while gathering the search");
}

}  // namespace

planner::PlannerResult gather_shards(const planner::PlannerResult& mine, const planner::PlannerOptions& options,
                                     const topology::Cluster& cluster, const model::Model& model, int rank, int ranks) {
  const std::string text = part_json(mine).dump();
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(ranks), 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "gather");
  std::vector<int> offsets(static_cast<std::size_t>(ranks), 0);
  std::size_t total = 0;
  for (int r = 0; r < ranks; ++r) {
    offsets[static_cast<std::size_t>(r)] = static_cast<int>(total);
    total += static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]);
  }
  std::string all(rank == 0 ? total : 0, '\0');
  check(MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                    MPI_COMM_WORLD),
        "gatherv");
  if (rank != 0) return {};

  std::vector<planner::Evaluated> candidates;
  planner::SearchStats stats;
  std::string infeasible;
  for (int r = 0; r < ranks; ++r) {
    const nlohmann::json part = nlohmann::json::parse(
        all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                   static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
    for (const nlohmann::json& p : part.at("plans")) {
      planner::Evaluated e;
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
    if (infeasible.empty()) infeasible = part.at("infeasible").get<std::string>();
  }
  planner::PlannerResult merged = planner::merge_shards(std::move(candidates), stats, options);
  merged.capacity = mine.capacity;
  if (merged.ranked.empty()) merged.infeasible = infeasible;
  return merged;
}

}  // namespace mpsim::cli
