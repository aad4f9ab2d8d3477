#pragma once
/// Measured runs: a training run's cluster, model and plan with what it measured, in the row format of
/// tests/validation/published_runs.yaml (docs/calibration.md, "Runs files"). What `mpsim calibrate`
/// fits a software profile to, and what the validation tests simulate.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "sim/calibration/software_profile.h"
#include "sim/core/yaml_field_fwd.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"

namespace mpsim::calibration {

/// The figure a run published: a step time, or a throughput that a step time follows from.
enum class FigureKind : std::uint8_t { StepTime, TokensPerSecPerGpu, ModelTflopsPerGpu };

struct MeasuredRun {
  std::string id;
  std::string file;              ///< the runs file, for messages
  std::string gpu_label;         ///< the row's `gpu` as written (empty when absent)
  std::string fit;               ///< the row's `fit` (validation rows: the constant fitted on it)
  topology::Cluster cluster;     ///< scaled to the run's GPUs
  model::Model model;
  plan::Plan plan;
  FigureKind figure = FigureKind::StepTime;
  double measured = 0;           ///< in the figure's unit: s, tokens/s per GPU, TFLOP/s per GPU
  std::optional<double> measured_peak_gib;
  PeakKind peak_kind = PeakKind::Reserved;  ///< which allocator peak measured_peak_gib is (`kind`)
  /// The pipeline stage whose ranks measured_peak_gib was read on (`stage`: first, last or its index);
  /// none: the largest over every rank.
  std::optional<int> peak_stage;

  /// The catalogue id of the run's GPUs (the first GPU's kind).
  [[nodiscard]] const std::string& gpu_kind() const;
  /// The catalogue ids of every kind among the run's GPUs (a mixed cluster's several), sorted.
  [[nodiscard]] std::vector<std::string> gpu_kinds() const;
  /// The run's measured step, given a prediction of it (a throughput figure is a step time once the
  /// tokens or model FLOPs per step are known: the prediction's).
  [[nodiscard]] double measured_step_s(const trace::Report& prediction) const;
  /// The prediction's figure, in the measured one's unit.
  [[nodiscard]] double predicted_figure(const trace::Report& prediction) const;
  /// "mixture of experts", "context parallel" or "dense": the validation's groups (prediction_group).
  [[nodiscard]] std::string group() const;
};

/// Where a row's relative paths are looked for: its runs file's folder first, then `topology_dirs`
/// for topology file names (the shipped topologies/).
struct RunPaths {
  std::filesystem::path base_dir;
  std::vector<std::filesystem::path> topology_dirs;
};

/// What a row runs: its topology (with `topology_set`) scaled to its `gpus`, its model and its plan
/// resolved against them. Reads only those fields; throws InputError at the field.
struct RunInputs {
  topology::Cluster cluster;
  model::Model model;
  plan::Plan plan;
};
[[nodiscard]] RunInputs load_run_inputs(const Field& row, const RunPaths& paths);

/// A measured peak's `stage` on `plan`'s pipeline: `first` (0), `last` or a stage's index (0-based).
/// Frameworks log a peak from one rank: Megatron-Bridge wrote its loggers' memory from the last rank
/// until it took the largest over the pipeline (its pull request 3645, May 2026), TorchTitan from the
/// last stage's first rank. Throws InputError at the field.
[[nodiscard]] int peak_stage_named(const Field& stage, const plan::Plan& plan);

/// One row. Throws InputError at the field.
[[nodiscard]] MeasuredRun load_measured_run(const Field& row, const RunPaths& paths);
/// Every row of a runs file: a list, or a mapping whose `rows` holds it. Throws InputError.
[[nodiscard]] std::vector<MeasuredRun> load_measured_runs(const std::filesystem::path& file,
                                                          const std::vector<std::filesystem::path>& topology_dirs);
/// The same from text (the fuzz harness): relative paths are looked for under `paths`.
[[nodiscard]] std::vector<MeasuredRun> parse_measured_runs(const std::string& text, const std::string& source_name,
                                                           const RunPaths& paths);

}  // namespace mpsim::calibration
