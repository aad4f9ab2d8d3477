#pragma once
#include <string>

#include "sim/core/input_error.h"
#include "sim/core/yaml_field.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::topology::testing {

inline std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// Builds a cluster from YAML text.
inline Cluster cluster_from(const std::string& yaml) {
  return build_cluster(load_topology_spec(YamlDocument::parse(yaml, "inline.yaml").root()));
}

/// The InputError message that building `yaml` throws, or "<no error>".
inline std::string error_of(const std::string& yaml) {
  try {
    (void)cluster_from(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace mpsim::topology::testing
