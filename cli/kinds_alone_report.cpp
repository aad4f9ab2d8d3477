#include "cli/kinds_alone_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/table.h"
#include "sim/plan/degrees_text.h"
#include "sim/plan/plan_json.h"

namespace mpsim::cli {

std::string plan_summary(const plan::Plan& p) {
  std::string axes = plan::summary(p.degrees);
  if (p.virtual_stages > 1) axes += fmt::format(", v {}", p.virtual_stages);
  return fmt::format("{}, mb {} x {}, {}, recompute {}, zero {}", axes, p.micro_batch, plan::microbatches_text(p),
                     plan::to_string(p.schedule), model::to_string(p.recompute), p.zero);
}

void add_best_plan_json(nlohmann::ordered_json& entry, const planner::Evaluated* best, const std::string& error) {
  if (best == nullptr) {
    entry["best_step_time_s"] = nullptr;
    entry["error"] = error;
    return;
  }
  entry["best_step_time_s"] = best->report.step_time_s;
  entry["peak_memory_bytes"] = best->report.peak_memory_bytes;
  entry["mfu"] = best->report.mfu;
  entry["plan_summary"] = plan_summary(best->plan);
  entry["plan"] = plan::plan_json(best->plan);
}

std::string kinds_alone_text(const std::vector<KindAloneSearch>& kinds, bool mix_has_plan) {
  if (kinds.empty()) return {};
  std::string out = "\nEach GPU kind alone (its nodes searched as the mix was; --no-single-kind leaves this out):\n";
  std::string warnings;
  for (const KindAloneSearch& k : kinds) {
    const int gpus = static_cast<int>(k.kind.cluster.gpus().size());
    out += fmt::format("  {} alone ({} GPUs): ", k.kind.name, gpus);
    const planner::Evaluated* best = k.best();
    if (best == nullptr) {
      out += fmt::format("no plan: {}\n", k.error);
      continue;
    }
    out += fmt::format("best {} ({})", seconds(best->report.step_time_s), plan_summary(best->plan));
    if (!k.against_mix) {
      out += mix_has_plan ? "\n" : "; the mix has no plan\n";
      continue;
    }
    const planner::AgainstMix& a = *k.against_mix;
    if (!a.alone_faster) {
      out += fmt::format(": the mix is {:.2f}x faster\n", a.mix_speedup);
      continue;
    }
    out += fmt::format(": {:.2f}x faster than the mix\n", 1 / a.mix_speedup);
    warnings += fmt::format("Warning: the {} {} alone are faster than the mix: {} vs {}; {}\n", gpus, k.kind.name,
                            seconds(a.alone_step_s), seconds(a.mix_step_s), a.why);
  }
  return warnings.empty() ? out : out + "\n" + warnings;
}

nlohmann::ordered_json kinds_alone_json(const std::vector<KindAloneSearch>& kinds) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const KindAloneSearch& k : kinds) {
    const planner::Evaluated* best = k.best();
    nlohmann::ordered_json entry{{"kind", k.kind.id},
                                 {"name", k.kind.name},
                                 {"nodes", k.kind.cluster.node_count},
                                 {"gpus", k.kind.cluster.gpus().size()},
                                 {"fits", best != nullptr}};
    add_best_plan_json(entry, best, k.error);
    if (k.against_mix) {
      const planner::AgainstMix& a = *k.against_mix;
      entry["faster"] = a.alone_faster ? "alone" : "mix";
      entry["mix_best_step_time_s"] = a.mix_step_s;
      entry["mix_speedup"] = a.mix_speedup;
      entry["main_reason"] = a.comparison.main_reason;
      entry["differences"] = a.comparison.differences;
      entry["mix_busiest_stage"] = a.mix_busiest_stage;
      entry["mix_busiest_kind"] = a.mix_busiest_kind;
      entry["why"] = a.alone_faster ? nlohmann::ordered_json(a.why) : nlohmann::ordered_json();
    } else {
      entry["faster"] = best != nullptr ? nlohmann::ordered_json("alone") : nlohmann::ordered_json();
    }
    entry["search_time_s"] = k.result.stats.search_time_s;
    out.push_back(std::move(entry));
  }
  return out;
}

nlohmann::ordered_json fastest_json(const std::vector<KindAloneSearch>& kinds,
                                    const std::vector<ClusterPartSearch>& parts, std::optional<double> mix_step_s) {
  nlohmann::ordered_json fastest;
  double step = 0;
  if (mix_step_s) {
    fastest = "mix";
    step = *mix_step_s;
  }
  // Strictly faster only: of equals, the mix (then the first kind, then the first part) stays.
  const auto consider = [&](const planner::Evaluated* best, const std::string& name) {
    if (best != nullptr && (fastest.is_null() || best->report.step_time_s < step)) {
      fastest = name;
      step = best->report.step_time_s;
    }
  };
  for (const KindAloneSearch& k : kinds) consider(k.best(), k.kind.id);
  for (const ClusterPartSearch& p : parts) consider(p.best(), p.part.label);
  return fastest;
}

}  // namespace mpsim::cli
