// A row of a validation file simulated as published (validation_support.h).
#include "tests/validation/validation_support.h"

#include <string>
#include <utility>

#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::validation {

std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

SimulatedRow simulate_row(const Field& row) {
  Outcome o;
  o.id = row.require("id").as_string();
  o.source = row.require("source").as_string();
  o.gpu = row.require("gpu").as_string();
  o.gpus = static_cast<int>(row.require("gpus").as_int_in(1, 1'000'000));
  if (auto a = row.get("assumed")) o.assumed = a->as_string();
  if (auto fit = row.get("fit")) o.fit = fit->as_string();

  YamlDocument topology_doc = YamlDocument::load(repo_path("topologies/" + row.require("topology").as_string()));
  if (auto sets = row.get("topology_set")) {
    for (const auto& [key, value] : sets->entries()) topology_doc.apply(Override{"topology", key, value.as_string(), o.id});
  }
  YamlDocument one_node = YamlDocument::load(repo_path("topologies/" + row.require("topology").as_string()));
  one_node.apply(Override{"topology", "nodes", "1", o.id});
  const int per_node =
      static_cast<int>(topology::build_cluster(topology::load_topology_spec(one_node.root())).gpus().size());
  // As simulate --gpus: whole nodes, part of one, or equal NVLink domains (256 GPUs as 4 racks of 64).
  const topology::JobShape shape = topology::job_shape(o.gpus, per_node);
  topology_doc.apply(Override{"topology", "nodes", std::to_string(shape.nodes), o.id});
  auto cluster = topology::build_cluster(topology::load_topology_spec(topology_doc.root()));
  cluster.keep_job_gpus(shape);

  model::Model model = model::parse_model(row.require("model"), o.id);
  plan::Plan plan = plan::resolve_plan(plan::load_plan_spec(row.require("plan")), cluster, model);
  engine::Prediction prediction = engine::simulate(cluster, model, plan);
  const trace::Report& report = prediction.report;
  o.step_s = report.step_time_s;
  o.oom = report.oom;
  o.peak_gib = static_cast<double>(report.peak_memory_bytes) / (1024.0 * 1024 * 1024);
  o.capacity_gib = static_cast<double>(report.devices.front().memory_capacity_bytes) / (1024.0 * 1024 * 1024);
  return {std::move(o), std::move(model), std::move(plan), std::move(prediction)};
}

}  // namespace mpsim::validation
