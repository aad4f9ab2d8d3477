#pragma once
#include <string>

#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::plan::testing {

inline std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

inline PlanSpec spec_from(const std::string& yaml) {
  return load_plan_spec(YamlDocument::parse(yaml, "plan.yaml").root());
}

/// Resolves `yaml` against a shipped topology and model; returns the error text or "<no error>".
inline std::string check_error(const std::string& yaml, const std::string& topology, const std::string& model) {
  try {
    (void)resolve_plan(spec_from(yaml), topology::load_topology_file(repo_path(topology)),
                       model::load_model_file(repo_path(model)));
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace mpsim::plan::testing
