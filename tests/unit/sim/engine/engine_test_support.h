#pragma once
/// Small scenarios with closed-form answers: a uniform pipeline whose layers have profiled times,
/// on a cluster whose links cost exactly latency + bytes / bandwidth.
#include <string>

#include <fmt/format.h>

#include "sim/core/yaml_field.h"
#include "sim/engine/simulator.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::engine::testing {

inline std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

inline topology::Cluster cluster_yaml(const std::string& yaml) {
  return topology::build_cluster(topology::load_topology_spec(YamlDocument::parse(yaml, "cluster.yaml").root()));
}
inline model::Model model_yaml(const std::string& yaml) {
  return model::load_model(YamlDocument::parse(yaml, "model.yaml").root());
}
inline plan::Plan plan_yaml(const std::string& yaml, const topology::Cluster& c, const model::Model& m) {
  return plan::resolve_plan(plan::load_plan_spec(YamlDocument::parse(yaml, "plan.yaml").root()), c, m);
}

/// One node of `gpus` GPUs on a PCIe switch: every GPU-to-GPU transfer costs `latency` + bytes / bandwidth.
inline topology::Cluster pcie_box(int gpus, const std::string& bandwidth = "10 GB/s", const std::string& latency = "0 us") {
  return cluster_yaml(fmt::format(
      "cluster: {{ gpus_per_node: {}, gpu: a100-80gb, intra_node: {{ kind: pcie, bandwidth: \"{}\", latency: \"{}\" }} }}\n",
      gpus, bandwidth, latency));
}

/// One node of `gpus` H100s on NVSwitch (450 GB/s per GPU and direction).
inline topology::Cluster h100_node(int gpus) {
  return cluster_yaml(fmt::format(
      "cluster: {{ gpus_per_node: {}, gpu: h100-sxm, intra_node: {{ kind: nvswitch, bandwidth: \"450 GB/s\" }} }}\n", gpus));
}

/// `layers` identical layers with profiled times, no parameters, sending `output_bytes` per sample.
inline model::Model timed_layers(int layers, const std::string& forward, const std::string& backward_input,
                                 const std::string& backward_weight, long output_bytes = 0, long activation_bytes = 0) {
  return model_yaml(fmt::format(
      "model:\n  name: uniform\n  layers:\n    - {{ name: block, repeat: {}, forward_time: \"{}\", backward_input_time: \"{}\", "
      "backward_weight_time: \"{}\", params: 0, activation_bytes: {}, output_bytes: {} }}\n",
      layers, forward, backward_input, backward_weight, activation_bytes, output_bytes));
}

/// A plan of `schedule` on `stages` pipeline ranks running `microbatches` per step, with `extra` plan
/// lines (e.g. "zb_memory_limit: 8\n").
inline plan::Plan pipeline_plan(int stages, int microbatches, const std::string& schedule, const topology::Cluster& c,
                                const model::Model& m, const std::string& extra = "") {
  return plan_yaml(fmt::format("parallelism: {{ pipeline: {} }}\nbatch: {{ microbatches: {} }}\nschedule: {}\n{}", stages,
                               microbatches, schedule, extra),
                   c, m);
}

}  // namespace mpsim::engine::testing
