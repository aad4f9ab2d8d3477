#pragma once
/// What the calibration tests share: runs files written inline against the shipped topologies, models
/// and plans, and the InputError a reader throws.
#include <filesystem>
#include <string>
#include <vector>

#include "sim/calibration/measured_run.h"
#include "sim/core/input_error.h"

namespace mpsim::calibration::testing {

inline std::string source_file(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// Relative paths resolve in the source tree, topology names among the shipped topologies (as
/// `mpsim calibrate` resolves them).
inline RunPaths source_tree_paths() {
  return RunPaths{std::filesystem::path(MPSIM_SOURCE_DIR), {std::filesystem::path(MPSIM_SOURCE_DIR) / "topologies"}};
}

/// The name runs text is parsed under: every error message names it.
inline constexpr const char* kRunsFileName = "inline-runs.yaml";

inline std::vector<MeasuredRun> runs_from(const std::string& yaml) {
  return parse_measured_runs(yaml, kRunsFileName, source_tree_paths());
}

/// One row of GPT-3 13B with the shipped plan for 4 p4d nodes; `topology` names a shipped topology
/// file, `extra` adds fields (YAML, indented by two spaces) such as `topology_set`.
inline std::string gpt3_13b_row(const std::string& id, const std::string& measured,
                                const std::string& topology = "4x-p4d.yaml", const std::string& extra = "") {
  return "- id: " + id + "\n  topology: " + topology + "\n  gpus: 32\n  model: configs/models/gpt3-13b.yaml\n"
         "  plan: configs/plans/gpt3-13b-4x-p4d.yaml\n  measured: " + measured + "\n" + extra;
}

/// The InputError message reading `yaml` as a runs file gives, or "<no error>".
inline std::string runs_file_error(const std::string& yaml) {
  try {
    (void)runs_from(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace mpsim::calibration::testing
