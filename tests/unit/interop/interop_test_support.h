#pragma once
#include <string>

#include "interop/export/export.h"
#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::interop::testing {

/// The cluster and model most launch tests export and import.
constexpr const char* kDgxH100 = "topologies/dgx-h100.yaml";
constexpr const char* kLlama8b = "configs/models/llama3-8b.yaml";

inline std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// A shipped plan resolved on a shipped topology (whole) and model, ready to export.
struct ResolvedPlan {
  topology::Cluster cluster;
  model::Model model;
  plan::PlanSpec spec;
  plan::Plan plan;
  std::string model_file;

  /// `gpus`: the job's first GPUs (as --gpus takes them); 0: the whole topology.
  ResolvedPlan(const std::string& topology, const std::string& model_path, const plan::PlanSpec& plan_spec, int gpus = 0)
      : cluster(job_cluster(topology, gpus)),
        model(model::load_model_file(repo_path(model_path))),
        spec(plan_spec),
        plan(plan::resolve_plan(spec, cluster, model)),
        model_file(model_path) {}
  ResolvedPlan(const std::string& topology, const std::string& model_path, const std::string& plan_path, int gpus = 0)
      : ResolvedPlan(topology, model_path, plan::load_plan_file(repo_path(plan_path)), gpus) {}

  static topology::Cluster job_cluster(const std::string& topology, int gpus) {
    topology::Cluster c = topology::load_topology_file(repo_path(topology));
    if (gpus > 0) c.keep_job_gpus(topology::job_shape(gpus, static_cast<int>(c.gpus_of_node(0).size())));
    return c;
  }
  /// `schedule_csv`: the CSV file name a TorchTitan TOML gives a schedule it runs from a CSV.
  [[nodiscard]] std::string exported(Framework target, const std::string& schedule_csv = {}) const {
    return export_plan(target, {plan, spec, model, model_file, launch_shape(cluster), schedule_csv});
  }
};

/// A plan written inline, resolved like ResolvedPlan.
inline plan::PlanSpec spec_from(const std::string& yaml) {
  return plan::load_plan_spec(YamlDocument::parse(yaml, "plan.yaml").root());
}

}  // namespace mpsim::interop::testing
