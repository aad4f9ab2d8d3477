#include "cli/cluster_parts_report.h"

#include <fmt/format.h>

#include "cli/kinds_alone_report.h"
#include "cli/table.h"

namespace mpsim::cli {

std::string cluster_parts_text(const std::vector<ClusterPartSearch>& parts, std::optional<double> mix_step_s) {
  if (parts.empty()) return {};
  std::string out =
      "\nParts of the cluster (the fastest kind alone's nodes with some of the others'; --no-single-kind leaves this "
      "out):\n";
  std::string warnings;
  for (const ClusterPartSearch& p : parts) {
    const std::size_t gpus = p.part.cluster.gpus().size();
    out += fmt::format("  {} ({} GPUs, {} nodes): ", p.part.label, gpus, p.part.cluster.node_count);
    const planner::Evaluated* best = p.best();
    if (best == nullptr) {
      out += fmt::format("no plan: {}\n", p.error);
      continue;
    }
    const double step = best->report.step_time_s;
    out += fmt::format("best {} ({})", seconds(step), plan_summary(best->plan));
    if (!mix_step_s) {
      out += "; the whole cluster has no plan\n";
      continue;
    }
    if (step >= *mix_step_s) {
      out += fmt::format(": the whole cluster is {:.2f}x faster\n", step / *mix_step_s);
      continue;
    }
    out += fmt::format(": {:.2f}x faster than the whole cluster\n", *mix_step_s / step);
    warnings += fmt::format("Warning: {} of the cluster's GPUs ({}) are faster than all of them: {} vs {}\n", gpus,
                            p.part.label, seconds(step), seconds(*mix_step_s));
  }
  return warnings.empty() ? out : out + "\n" + warnings;
}

nlohmann::ordered_json cluster_parts_json(const std::vector<ClusterPartSearch>& parts, std::optional<double> mix_step_s) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ClusterPartSearch& p : parts) {
    const planner::Evaluated* best = p.best();
    nlohmann::ordered_json entry{{"label", p.part.label},
                                 {"cluster_nodes", p.part.nodes},
                                 {"added_nodes", p.part.added_nodes},
                                 {"nodes", p.part.cluster.node_count},
                                 {"gpus", p.part.cluster.gpus().size()},
                                 {"fits", best != nullptr}};
    add_best_plan_json(entry, best, p.error);
    if (best != nullptr && mix_step_s) {
      entry["faster"] = best->report.step_time_s < *mix_step_s ? "part" : "mix";
      entry["mix_speedup"] = best->report.step_time_s / *mix_step_s;
    } else {
      entry["faster"] = best != nullptr ? nlohmann::ordered_json("part") : nlohmann::ordered_json();
      entry["mix_speedup"] = nullptr;
    }
    entry["search_time_s"] = p.result.stats.search_time_s;
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace mpsim::cli
