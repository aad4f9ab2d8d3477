#pragma once
#include <string>

#include "sim/launch/export.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::launch::testing {

inline std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// A shipped plan resolved on a shipped topology (whole) and model, ready to export.
struct ResolvedPlan {
  topology::Cluster cluster;
  model::Model model;
  plan::PlanSpec spec;
  plan::Plan plan;
  std::string model_file;

  ResolvedPlan(const std::string& topology, const std::string& model_path, const plan::PlanSpec& plan_spec)
      : cluster(topology::load_topology_file(repo_path(topology))),
        model(model::load_model_file(repo_path(model_path))),
        spec(plan_spec),
        plan(plan::resolve_plan(spec, cluster, model)),
        model_file(model_path) {}
  ResolvedPlan(const std::string& topology, const std::string& model_path, const std::string& plan_path)
      : ResolvedPlan(topology, model_path, plan::load_plan_file(repo_path(plan_path))) {}

  /// The job's nodes: every node of the topology, all its GPUs.
  [[nodiscard]] LaunchShape shape() const {
    const int gpus = static_cast<int>(cluster.gpus().size());
    return {cluster.node_count, gpus / cluster.node_count};
  }
  [[nodiscard]] std::string exported(Framework target) const {
    return export_plan(target, {plan, spec, model, model_file, shape()});
  }
};

/// A plan written inline, resolved like ResolvedPlan.
inline plan::PlanSpec spec_from(const std::string& yaml) {
  return plan::load_plan_spec(YamlDocument::parse(yaml, "plan.yaml").root());
}

}  // namespace mpsim::launch::testing
