// mpsim compare: a predicted step against a measured one (step time, devices, instruction kinds).
#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "interop/trace/framework_trace.h"
#include "sim/core/gzip.h"
#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/trace/compare.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

struct CompareArgs {
  std::string predicted;
  std::vector<std::string> measured;  ///< one mpsim trace or report, a step-time log, or a Kineto trace per rank
  std::optional<int> gpus_per_node;
  bool json = false;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open the file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError({path, 0, 0}, "", "cannot read the file");
  // Traces and PyTorch profiler traces are often gzipped (.json.gz): recognised by content, not name.
  try {
    return gunzip_if_gzip(std::move(text));
  } catch (const GzipError& e) {
    throw InputError({path, 0, 0}, "", e.what());
  }
}

/// A trace (Chrome trace with the report under "mpsim", as `simulate --trace` and `execute --trace`
/// write), or a bare report (`simulate --json`), which has no timeline. Throws InputError naming the file.
trace::StepRecord load_step(const std::string& path);

/// The GPUs per node of the predicted devices' names (node0/gpu0, node0/gpu1, ...): 8 when it names none.
int predicted_gpus_per_node(const trace::Report& predicted) {
  const auto on_node0 = std::count_if(predicted.devices.begin(), predicted.devices.end(),
                                      [](const trace::DeviceReport& d) { return d.id.rfind("node0/", 0) == 0; });
  return on_node0 > 0 ? static_cast<int>(on_node0) : 8;
}

/// The measured side: a framework's run (a PyTorch profiler trace per rank, or a step-time log), or
/// what load_step() reads. Throws InputError naming the file.
trace::StepRecord load_measured(const CompareArgs& args, const trace::Report& predicted) {
  const std::string first = read_whole_file(args.measured.front());
  const bool kineto = interop::is_kineto_trace(first);
  if (!kineto && args.measured.size() > 1) {
    throw InputError({args.measured[1], 0, 0}, "",
                     "several measured files are the ranks of one PyTorch profiler (Kineto) run; " + args.measured.front() +
                         " is not one");
  }
  try {
    if (kineto) {
      std::vector<interop::KinetoFile> ranks;
      for (const std::string& path : args.measured) ranks.push_back({path, path == args.measured.front() ? first : read_whole_file(path)});
      const trace::PlanSummary& p = predicted.plan;
      // Megatron's rank order puts a stage's tensor x context x data ranks together.
      const int ranks_per_stage = p.pipeline > 1 ? p.tensor * p.context * p.data : 0;
      return interop::read_kineto_step(ranks, args.gpus_per_node.value_or(predicted_gpus_per_node(predicted)),
                                       ranks_per_stage);
    }
    if (interop::is_step_time_log(first)) return interop::read_step_time_log(first, args.measured.front());
  } catch (const trace::TraceReadError& e) {
    throw InputError({args.measured.front(), 0, 0}, "", e.what());
  }
  return load_step(args.measured.front());
}

trace::StepRecord load_step(const std::string& path) {
  const std::string text = read_whole_file(path);
  trace::StepRecord step;
  try {
    if (text.find("\"traceEvents\"") != std::string::npos) {
      trace::TraceFile file = trace::parse_trace(text, path);
      if (file.report) {
        step.report = std::move(*file.report);
      } else {
        // A trace without the report: the step spans the whole timeline; devices are unknown.
        step.report.step_time_s = trace::timeline_extent_s(file.timeline);
      }
      step.timeline = std::move(file.timeline);
      return step;
    }
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) throw InputError({path, 0, 0}, "", "not JSON: expected a trace or a report");
    if (!doc.is_object() || !doc.contains("step_time_s")) {
      throw InputError({path, 0, 0}, "",
                       "neither a trace (no \"traceEvents\") nor a report (no \"step_time_s\"); give the output "
                       "of `simulate --trace` or `simulate --json`");
    }
    step.report = trace::parse_report(doc);
  } catch (const trace::TraceReadError& e) {
    // parse_trace's messages already start with the file name; parse_report's do not.
    const std::string what = e.what();
    if (what.rfind(path + ": ", 0) == 0) throw InputError({path, 0, 0}, "", what.substr(path.size() + 2));
    throw InputError({path, 0, 0}, "", what);
  }
  return step;
}

std::string seconds_or_dash(const std::optional<double>& s) { return s ? cli::seconds(*s) : "-"; }
std::string percent_or_dash(const std::optional<double>& fraction) { return fraction ? cli::percent(*fraction) : "-"; }
std::string ratio(const std::optional<double>& r) { return r ? fmt::format("{:.2f}", *r) : "-"; }

void print_comparison(const CompareArgs& args, const trace::Comparison& c) {
  std::cout << fmt::format("predicted {}\nmeasured  {}\n\n", args.predicted, fmt::join(args.measured, " "));
  Table summary;
  summary.add_row({"", "predicted", "measured", "error"});
  summary.add_row({"step time", seconds_or_dash(c.predicted_step_time_s), seconds_or_dash(c.measured_step_time_s),
                   percent_or_dash(c.step_time_error)});
  summary.add_row(
      {"idle", percent_or_dash(c.predicted_bubble_fraction), percent_or_dash(c.measured_bubble_fraction), ""});
  std::cout << summary.render();
  if (!c.devices.empty()) {
    std::cout << "\n";
    Table devices;
    devices.add_row({"device", "stage", "busy pred", "busy meas", "idle pred", "idle meas"});
    for (const auto& d : c.devices) {
      devices.add_row({d.id, std::to_string(d.stage), seconds_or_dash(d.predicted_busy_s),
                       seconds_or_dash(d.measured_busy_s), percent_or_dash(d.predicted_bubble_fraction),
                       percent_or_dash(d.measured_bubble_fraction)});
    }
    std::cout << devices.render();
  }
  if (!c.stages.empty()) {
    std::cout << "\nper stage (the mean over its devices):\n";
    Table stages;
    stages.add_row({"stage", "devices pred", "devices meas", "busy pred", "busy meas", "idle pred", "idle meas"});
    for (const auto& st : c.stages) {
      stages.add_row({std::to_string(st.stage), std::to_string(st.predicted_devices), std::to_string(st.measured_devices),
                      seconds_or_dash(st.predicted_busy_s), seconds_or_dash(st.measured_busy_s),
                      percent_or_dash(st.predicted_idle_fraction), percent_or_dash(st.measured_idle_fraction)});
    }
    std::cout << stages.render();
  }
  if (!c.per_kind.empty()) {
    std::cout << "\nper instruction kind (ratio = predicted / measured):\n";
    Table kinds;
    kinds.add_row({"kind", "count pred", "count meas", "mean pred", "mean meas", "ratio", "median pred", "median meas",
                   "ratio"});
    for (const auto& k : c.per_kind) {
      const auto mean = [](const trace::DurationStats& s) { return s.count > 0 ? seconds_or_dash(s.mean_s) : "-"; };
      const auto median = [](const trace::DurationStats& s) { return s.count > 0 ? seconds_or_dash(s.median_s) : "-"; };
      kinds.add_row({std::string(trace::to_string(k.kind)), std::to_string(k.predicted.count),
                     std::to_string(k.measured.count), mean(k.predicted), mean(k.measured), ratio(k.mean_ratio),
                     median(k.predicted), median(k.measured), ratio(k.median_ratio)});
    }
    std::cout << kinds.render();
  }
  if (c.matched_ops > 0) {
    std::cout << fmt::format("\nper op: {} ops in both traces, median ratio {}; the largest differences:\n", c.matched_ops,
                             ratio(c.op_median_ratio));
    Table ops;
    ops.add_row({"device", "op", "kind", "mb", "chunk", "predicted", "measured"});
    for (const auto& o : c.worst_ops) {
      const auto or_dash = [](std::int32_t v) { return v >= 0 ? std::to_string(v) : std::string("-"); };
      ops.add_row({o.device, std::to_string(o.op), std::string(trace::to_string(o.kind)), or_dash(o.microbatch),
                   or_dash(o.chunk), seconds_or_dash(o.predicted_s), seconds_or_dash(o.measured_s)});
    }
    std::cout << ops.render();
  }
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Hold a prediction to account: a predicted step against a measured one");
  cmd->add_option("PREDICTED", args->predicted, "Predicted trace (simulate --trace) or report (simulate --json)")
      ->required();
  cmd->add_option("MEASURED", args->measured,
                  "Measured trace (execute --trace) or report (execute --json); a PyTorch profiler (Kineto) trace "
                  "per rank of a Megatron-LM / NeMo / TorchTitan run; or a Megatron-LM / NeMo step-time log")
      ->required();
  cmd->add_option("--gpus-per-node", args->gpus_per_node,
                  "With Kineto traces: GPUs per node, to name rank r's GPU (default: as the prediction names them)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "Print the comparison as JSON");
  cmd->footer(
      "The step time error is |predicted - measured| / measured. Per instruction kind, the ratio is\n"
      "predicted / measured of the mean and of the median span duration (above 1: the prediction is slower).\n"
      "Example:\n"
      "  mpsim simulate --topology T --model M --plan P --trace pred.json\n"
      "  mpsim execute --topology T --model M --plan P --ranks 2 --trace meas.json\n"
      "  mpsim compare pred.json meas.json\n"
      "  mpsim compare pred.json rank0.pt.trace.json rank1.pt.trace.json   (PyTorch profiler traces of a real run)\n"
      "  mpsim compare pred.json train.log                                  (Megatron-LM or NeMo step times)");
  cmd->callback([args] {
    const trace::StepRecord predicted = load_step(args->predicted);
    const trace::StepRecord measured = load_measured(*args, predicted.report);
    const trace::Comparison c = trace::compare(predicted, measured);
    if (args->json) {
      std::cout << trace::comparison_json(c).dump(2) << "\n";
    } else {
      print_comparison(*args, c);
    }
  });
}

}  // namespace mpsim::cli
