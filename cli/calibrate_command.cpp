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
#include "sim/calibration/kernel_rates.h"
#include "sim/calibration/profile_file.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/trace/kernel_class.h"

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
  bool per_kind = false;
  bool json = false;
};

/// The run that --measured describes, and what its profiler traces' kernels say (nothing for a log).
struct MeasuredInput {
  calibration::MeasuredRun run;
  interop::TraceKernels kernels;                     ///< by rank; none without traces
  std::vector<calibration::KernelReading> readings;  ///< by class; empty without kernels
  std::vector<calibration::ReadFactor> read;         ///< the factors the readings set
};

/// The traced ranks' kernels of the classes a factor prices (trace::KernelClass on both sides), each
/// against its pipeline rank (0 without pipeline parallelism).
std::vector<calibration::MeasuredKernels> measured_kernels(const interop::TraceKernels& kernels) {
  std::vector<calibration::MeasuredKernels> out;
  for (const interop::RankKernels& rank : kernels.ranks) {
    calibration::MeasuredKernels m;
    m.stage = std::max(0, rank.stage);
    for (const trace::KernelClass c : trace::kKernelClasses) {
      m.kernels[static_cast<std::size_t>(c)] = rank[c].kernels;
      m.seconds_per_step[static_cast<std::size_t>(c)] = rank[c].seconds / std::max(1, rank.steps);
    }
    out.push_back(m);
  }
  return out;
}

/// The run that --topology, --model, --plan and --measured describe: its step from the log or traces,
/// and with traces the factors their kernels set (those --factors allows).
MeasuredInput measured_run(const CalibrateArgs& args, const calibration::CalibrationOptions& options) {
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
  MeasuredInput out;
  const trace::StepRecord step = load_measured_step(args.measured, std::nullopt, predicted, &out.kernels);
  if (step.report.step_time_s <= 0) throw InputError({args.measured.front(), 0, 0}, "", "gives no step time");
  run.figure = calibration::FigureKind::StepTime;
  run.measured = step.report.step_time_s;
  if (!out.kernels.ranks.empty()) {
    try {
      out.readings = calibration::kernel_readings(run, measured_kernels(out.kernels));
    } catch (const std::invalid_argument& e) {
      throw InputError({args.measured.front(), 0, 0}, "", e.what());
    }
    for (const calibration::ReadFactor& f : calibration::read_kernel_factors(out.readings, run.cluster)) {
      if (std::find(options.factors.begin(), options.factors.end(), f.kind) != options.factors.end()) out.read.push_back(f);
    }
  }
  out.run = std::move(run);
  return out;
}

/// The traces' kernels by class against mpsim's prediction, and the names no rule knows.
void print_kernels(const MeasuredInput& measured) {
  const auto ms = [](double s) { return fmt::format("{:.3f} ms", s * 1e3); };
  Table table;
  table.add_row({"kernels", "count", "measured / step", "predicted / step", "factor"});
  for (const calibration::KernelReading& r : measured.readings) {
    const auto read = std::find_if(measured.read.begin(), measured.read.end(), [&](const calibration::ReadFactor& f) {
      return f.kind == calibration::factor_of(r.kernel_class);
    });
    std::string factor = "-";
    if (read != measured.read.end()) factor = fmt::format("{:.3f}{}", read->value, read->clamped ? " (clamped)" : "");
    table.add_row({std::string(trace::to_string(r.kernel_class)), std::to_string(r.kernels), ms(r.measured_s),
                   ms(r.predicted_s), factor});
  }
  // NCCL's kernels and the unknown ones: measured only (the links are fitted to the step).
  const double ranks = static_cast<double>(std::max<std::size_t>(1, measured.kernels.ranks.size()));
  for (const interop::UnpricedKernel c : {interop::UnpricedKernel::Nccl, interop::UnpricedKernel::Other}) {
    std::int64_t count = 0;
    double per_step = 0;
    for (const interop::RankKernels& rank : measured.kernels.ranks) {
      count += rank[c].kernels;
      per_step += rank[c].seconds / std::max(1, rank.steps);
    }
    table.add_row({std::string(interop::to_string(c)), std::to_string(count), ms(per_step / ranks), "-", "-"});
  }
  std::cout << "Kernels of the traces, per step on a rank (mean over " << measured.kernels.ranks.size() << " ranks):\n"
            << table.render();
  if (measured.read.empty()) {
    std::cout << "No class of kernel is both in the traces and in mpsim's prediction: every factor is fitted to the step.\n";
  }
  if (!measured.kernels.other_names.empty()) {
    std::vector<std::pair<std::string, interop::KernelTime>> names(measured.kernels.other_names.begin(),
                                                                   measured.kernels.other_names.end());
    std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    constexpr std::size_t kShown = 5;
    std::cout << fmt::format("{} kernel name(s) of no known class (counted as other, in no factor){}:\n", names.size(),
                             names.size() > kShown ? fmt::format("; the {} longest", kShown) : "");
    for (std::size_t i = 0; i < std::min(kShown, names.size()); ++i) {
      std::cout << fmt::format("  {} ({} kernels, {})\n", names[i].first.substr(0, 120), names[i].second.kernels,
                               ms(names[i].second.seconds));
    }
  }
  std::cout << "\n";
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
  options.per_kind = args.per_kind;
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
    const bool read = !profile.read_factors.empty();  // then each factor says how it was set
    const bool per_kind = std::any_of(profile.factors.begin(), profile.factors.end(),
                                      [](const calibration::Factor& f) { return !f.gpu_kind.empty(); });
    std::vector<std::string> header{"factor", "value", "meaning"};
    if (per_kind) header.insert(header.begin() + 1, "GPU kind");
    if (read) header.emplace_back("set");
    factors.add_row(header);
    for (const calibration::Factor& f : profile.factors) {
      const char* against = f.kind == calibration::FactorKind::ActivationMemory ? "mpsim's count of the activations"
                            : f.kind == calibration::FactorKind::AllRates     ? "the catalogue's rates, every one alike"
                                                                              : "the catalogue's rate";
      std::vector<std::string> row{std::string(calibration::to_string(f.kind)), fmt::format("{:.3f}", f.value),
                                   fmt::format("{:+.1f} % against {}", (f.value - 1) * 100, against)};
      if (per_kind) row.insert(row.begin() + 1, f.gpu_kind.empty() ? "all" : f.gpu_kind);
      if (read) row.push_back(f.gpu_kind.empty() ? profile.factor_source(f.kind) : "fitted to the runs' steps");
      factors.add_row(row);
    }
    std::cout << factors.render();
    for (const calibration::FactorRuns& set : profile.set_by) {
      std::cout << fmt::format("{}{} set by {} run(s): {}\n", calibration::to_string(set.kind),
                               set.gpu_kind.empty() ? "" : " on " + set.gpu_kind, set.runs.size(),
                               fmt::join(set.runs, ", "));
    }
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
      const std::string kind(calibration::to_string(r.kind));
      peaks.add_row({r.run, fmt::format("{:.2f} GiB", r.measured_gib),
                     r.stage ? fmt::format("{}, stage {}", kind, *r.stage) : kind,
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
  calibration::CalibrationOptions options = calibration_options(args);
  std::optional<MeasuredInput> measured;
  if (!args.measured.empty()) {
    measured = measured_run(args, options);
    runs.push_back(measured->run);
    options.read = measured->read;
  }
  std::string name = args.name;
  if (name.empty()) name = args.output.empty() ? "profile" : std::filesystem::path(args.output).stem().string();
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
    if (measured && !measured->kernels.ranks.empty()) print_kernels(*measured);
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
  cmd->add_option("--factors", args->factors,
                  "Only these factors may be fitted (comma-separated; default: all_rates first, then each rate's own "
                  "where the runs tell it apart)")
      ->delimiter(',');
  cmd->add_option("--max-factors", args->max_factors, "At most this many factors (default: as many as the runs determine)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--per-kind", args->per_kind,
                "Fit the GPU factors (gemm, fp8_gemm, attention, memory_bound) once per GPU kind of the runs, the links' "
                "factors shared and all_rates not fitted");
  cmd->add_flag("--json", args->json, "Print the profile as JSON");
  cmd->callback([args] { run_calibrate(*args); });
}

}  // namespace mpsim::cli
