// A row of a validation file simulated as published (validation_support.h).
#include "tests/validation/validation_support.h"

#include <string>
#include <utility>

#include "sim/calibration/measured_run.h"

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

  calibration::RunInputs inputs =
      calibration::load_run_inputs(row, {repo_path("tests/validation"), {repo_path("topologies")}});
  model::Model model = std::move(inputs.model);
  plan::Plan plan = std::move(inputs.plan);
  const topology::Cluster& cluster = inputs.cluster;
  engine::Prediction prediction = engine::simulate(cluster, model, plan);
  const trace::Report& report = prediction.report;
  o.step_s = report.step_time_s;
  o.oom = report.oom;
  o.peak_gib = static_cast<double>(report.peak_memory_bytes) / (1024.0 * 1024 * 1024);
  o.capacity_gib = static_cast<double>(report.devices.front().memory_capacity_bytes) / (1024.0 * 1024 * 1024);
  return {std::move(o), std::move(model), std::move(plan), std::move(prediction)};
}

}  // namespace mpsim::validation
