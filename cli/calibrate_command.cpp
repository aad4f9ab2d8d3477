// mpsim calibrate: a software profile fitted to measured runs (docs/calibration.md).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/measured_step.h"
#include "cli/table.h"
#include "sim/calibration/calibrate.h"
#include "sim/calibration/profile_file.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"

namespace mpsim::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> runs_files;
  std::vector<std::string> only;       ///< the ids of the runs files' rows to fit on; empty: every row
  InputFiles files;                    ///< with --measured: the measured run's inputs
  std::vector<std::string> measured;   ///< a step-time log, or a PyTorch profiler trace per rank
  std::vector<std::string> sets;
  std::string output;
  std::string name;
  std::vector<std::string> factors;
  int max_factors = 0;
  bool json = false;
};

/// The run that --topology, --model, --plan and --measured describe: its step from the log or traces.
calibration::MeasuredRun measured_run(const CalibrateArgs& args) {
  for (const auto& [flag, value] : {std::pair{"--topology", args.files.topology}, {"--model", args.files.model},
                                    {"--plan", args.files.plan}}) {
    if (value.empty()) throw InputError({"--measured", 0, 0}, "", fmt::format("needs {} (the measured run's)", flag));
  }
  std::vector<Override> overrides;
  for (const std::string& s : args.sets) overrides.push_back(parse_override(s, "--set"));
  InputFiles files = args.files;
  files.topology_profile = false;  // the fit starts from the catalogue's rates
  Inputs in = load_inputs(files, overrides);
  calibration::MeasuredRun run;
  run.id = args.measured.front();
  run.file = args.measured.front();
  run.cluster = std::move(in.cluster);
  run.model = std::move(in.model);
  run.plan = std::move(*in.plan);
  const trace::Report predicted = calibration::predict(run, {});
  const trace::StepRecord step = load_measured_step(args.measured, std::nullopt, predicted);
  if (step.report.step_time_s <= 0) throw InputError({args.measured.front(), 0, 0}, "", "gives no step time");
  run.figure = calibration::FigureKind::StepTime;
  run.measured = step.report.step_time_s;
  return run;
}

/// The rows named by --only, in the runs files' order; an id no runs file has is an error.
std::vector<calibration::MeasuredRun> only_runs(std::vector<calibration::MeasuredRun> runs,
                                                const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (std::none_of(runs.begin(), runs.end(), [&](const calibration::MeasuredRun& r) { return r.id == id; })) {
      throw InputError({"--only " + id, 0, 0}, "", "no row of the runs files has this id");
    }
  }
  std::erase_if(runs, [&](const calibration::MeasuredRun& r) { return std::find(ids.begin(), ids.end(), r.id) == ids.end(); });
  return runs;
}

calibration::CalibrationOptions calibration_options(const CalibrateArgs& args) {
  calibration::CalibrationOptions options;
  options.max_factors = args.max_factors;
  if (!args.factors.empty()) {
    options.factors.clear();
    for (const std::string& name : args.factors) {
      const auto kind = calibration::factor_kind_named(name);
      if (!kind) {
        throw InputError({"--factors " + name, 0, 0}, "",
                         fmt::format("unknown factor (one of {})", fmt::join(calibration::factor_names(), ", ")));
      }
      options.factors.push_back(*kind);
    }
  }
  return options;
}

void print_profile(const calibration::SoftwareProfile& profile) {
  if (profile.factors.empty()) {
    std::cout << "No factor moves these runs' predicted steps: the profile is empty.\n";
  } else {
    Table factors;
    factors.add_row({"factor", "value", "meaning"});
    for (const calibration::Factor& f : profile.factors) {
      const bool memory = f.kind == calibration::FactorKind::ActivationMemory;
      factors.add_row({std::string(calibration::to_string(f.kind)), fmt::format("{:.3f}", f.value),
                       fmt::format("{:+.1f} % against {}", (f.value - 1) * 100,
                                   memory ? "mpsim's count of the activations" : "the catalogue's rate")});
    }
    std::cout << factors.render();
  }
  if (!profile.residuals.empty()) {
    Table runs;
    runs.add_row({"run", "measured step", "uncalibrated", "error", "calibrated", "error"});
    for (const calibration::FitResidual& r : profile.residuals) {
      runs.add_row({r.run, seconds(r.measured_step_s), seconds(r.uncalibrated_step_s),
                    fmt::format("{:+.1f} %", (r.uncalibrated_step_s / r.measured_step_s - 1) * 100),
                    seconds(r.predicted_step_s), fmt::format("{:+.1f} %", r.error() * 100)});
    }
    std::cout << "\n" << runs.render();
  }
  if (!profile.peak_residuals.empty()) {
    Table peaks;
    peaks.add_row({"run", "measured peak", "kind", "uncalibrated", "error", "calibrated", "error"});
    for (const calibration::PeakResidual& r : profile.peak_residuals) {
      peaks.add_row({r.run, fmt::format("{:.2f} GiB", r.measured_gib), std::string(calibration::to_string(r.kind)),
                     fmt::format("{:.2f} GiB", r.uncalibrated_gib),
                     fmt::format("{:+.1f} %", (r.uncalibrated_gib / r.measured_gib - 1) * 100),
                     fmt::format("{:.2f} GiB", r.predicted_gib), fmt::format("{:+.1f} %", r.error() * 100)});
    }
    std::cout << "\n" << peaks.render();
  }
}

void run_calibrate(const CalibrateArgs& args) {
  if (args.runs_files.empty() && args.measured.empty()) {
    throw InputError({"mpsim calibrate", 0, 0}, "", "give a runs file, or --measured with --topology, --model and --plan");
  }
  std::vector<calibration::MeasuredRun> runs;
  const std::vector<std::filesystem::path> shipped{std::filesystem::path(MPSIM_DATA_DIR) / "topologies"};
  for (const std::string& file : args.runs_files) {
    for (auto& run : calibration::load_measured_runs(file, shipped)) runs.push_back(std::move(run));
  }
  if (!args.only.empty()) runs = only_runs(std::move(runs), args.only);
  if (!args.measured.empty()) runs.push_back(measured_run(args));
  std::string name = args.name;
  if (name.empty()) name = args.output.empty() ? "profile" : std::filesystem::path(args.output).stem().string();
  const calibration::CalibrationOptions options = calibration_options(args);
  // calibrate() takes this as a broken precondition; here it is the runs files' content (--measured
  // always gives a step), so it is reported as their error.
  const bool memory = std::find(options.factors.begin(), options.factors.end(),
                                calibration::FactorKind::ActivationMemory) != options.factors.end();
  const bool steps = std::any_of(options.factors.begin(), options.factors.end(),
                                 [](calibration::FactorKind k) { return k != calibration::FactorKind::ActivationMemory; });
  if (std::none_of(runs.begin(), runs.end(), [&](const calibration::MeasuredRun& run) {
        return (steps && run.measured > 0) || (memory && run.measured_peak_gib);
      })) {
    throw InputError({args.runs_files.empty() ? std::string("--measured") : args.runs_files.front(), 0, 0}, "",
                     memory ? "no run gives a step time, a throughput or a peak memory to calibrate on"
                            : "no run gives a step time or a throughput to calibrate on (only peak memories)");
  }
  const calibration::SoftwareProfile profile = calibration::calibrate(runs, name, options);
  if (!args.output.empty()) write_file_atomically(args.output, calibration::write_profile_yaml(profile));
  if (args.json) {
    std::cout << calibration::profile_json(profile).dump(2) << "\n";
  } else {
    print_profile(profile);
    if (!args.output.empty()) std::cout << fmt::format("\nwrote {}\n", args.output);
  }
}

}  // namespace

void add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a software profile (factors on the catalogue's rates) to measured runs");
  cmd->add_option("runs", args->runs_files, "Runs files (the row format of tests/validation/published_runs.yaml)");
  cmd->add_option("--only", args->only, "Fit on these rows of the runs files only (their ids, comma-separated)")
      ->delimiter(',');
  cmd->add_option("-o,--output", args->output, "Write the profile here (YAML; use it with --profile)");
  cmd->add_option("--name", args->name, "The profile's name (default: the output file's stem)");
  cmd->add_option("--topology", args->files.topology, "With --measured: the measured run's topology");
  cmd->add_option("--model", args->files.model, "With --measured: its model");
  cmd->add_option("--plan", args->files.plan, "With --measured: its plan");
  cmd->add_option("--set", args->sets, "With --measured: override an input field, PATH=VALUE (repeatable)");
  cmd->add_option("--measured", args->measured,
                  "A Megatron-LM / NeMo step-time log, or a PyTorch profiler trace per rank, of that run");
  cmd->add_option("--factors", args->factors, "Only these factors may be fitted (comma-separated)")->delimiter(',');
  cmd->add_option("--max-factors", args->max_factors, "At most this many factors (default: as many as the runs determine)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "Print the profile as JSON");
  cmd->callback([args] { run_calibrate(*args); });
}

}  // namespace mpsim::cli
