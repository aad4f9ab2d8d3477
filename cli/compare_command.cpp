// mpsim compare: a predicted step against a measured one (step time, devices, instruction kinds).
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/trace/compare.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

struct CompareArgs {
  std::string predicted;
  std::string measured;
  bool json = false;
};

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open the file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError({path, 0, 0}, "", "cannot read the file");
  return text;
}

/// A trace (Chrome trace with the report under "mpsim", as `simulate --trace` and `execute --trace`
/// write), or a bare report (`simulate --json`), which has no timeline. Throws InputError naming the file.
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

std::string seconds(const std::optional<double>& s) { return s ? cli::seconds(*s) : "-"; }
std::string percent(const std::optional<double>& fraction) { return fraction ? cli::percent(*fraction) : "-"; }
std::string ratio(const std::optional<double>& r) { return r ? fmt::format("{:.2f}", *r) : "-"; }

void print_comparison(const CompareArgs& args, const trace::Comparison& c) {
  std::cout << fmt::format("predicted {}\nmeasured  {}\n\n", args.predicted, args.measured);
  Table summary;
  summary.add_row({"", "predicted", "measured", "error"});
  summary.add_row({"step time", seconds(c.predicted_step_time_s), seconds(c.measured_step_time_s),
                   percent(c.step_time_error)});
  summary.add_row({"idle", percent(c.predicted_bubble_fraction), percent(c.measured_bubble_fraction), ""});
  std::cout << summary.render();
  if (!c.devices.empty()) {
    std::cout << "\n";
    Table devices;
    devices.add_row({"device", "stage", "busy pred", "busy meas", "bubble pred", "bubble meas"});
    for (const auto& d : c.devices) {
      devices.add_row({d.id, std::to_string(d.stage), seconds(d.predicted_busy_s), seconds(d.measured_busy_s),
                       percent(d.predicted_bubble_fraction), percent(d.measured_bubble_fraction)});
    }
    std::cout << devices.render();
  }
  if (!c.per_kind.empty()) {
    std::cout << "\nper instruction kind (ratio = predicted / measured):\n";
    Table kinds;
    kinds.add_row({"kind", "count pred", "count meas", "mean pred", "mean meas", "ratio", "median pred", "median meas",
                   "ratio"});
    for (const auto& k : c.per_kind) {
      const auto mean = [](const trace::DurationStats& s) { return s.count > 0 ? seconds(s.mean_s) : "-"; };
      const auto median = [](const trace::DurationStats& s) { return s.count > 0 ? seconds(s.median_s) : "-"; };
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
                   or_dash(o.chunk), seconds(o.predicted_s), seconds(o.measured_s)});
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
  cmd->add_option("MEASURED", args->measured, "Measured trace (execute --trace) or report (execute --json)")
      ->required();
  cmd->add_flag("--json", args->json, "Print the comparison as JSON");
  cmd->footer(
      "The step time error is |predicted - measured| / measured. Per instruction kind, the ratio is\n"
      "predicted / measured of the mean and of the median span duration (above 1: the prediction is slower).\n"
      "Example:\n"
      "  mpsim simulate --topology T --model M --plan P --trace pred.json\n"
      "  mpsim execute --topology T --model M --plan P --ranks 2 --trace meas.json\n"
      "  mpsim compare pred.json meas.json");
  cmd->callback([args] {
    const trace::StepRecord predicted = load_step(args->predicted);
    const trace::StepRecord measured = load_step(args->measured);
    const trace::Comparison c = trace::compare(predicted, measured);
    if (args->json) {
      std::cout << trace::comparison_json(c).dump(2) << "\n";
    } else {
      print_comparison(*args, c);
    }
  });
}

}  // namespace mpsim::cli
