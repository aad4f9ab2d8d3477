// mpsim schedule show | export | import: a plan's per-rank instruction streams, and PyTorch's
// pipelining CSV both ways (interop/formats/torch_csv.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/report_text.h"
#include "interop/formats/torch_csv.h"
#include "sim/core/text_file.h"
#include "sim/engine/simulator.h"
#include "sim/engine/traced_simulation.h"
#include "sim/schedule/generators.h"
#include "sim/trace/trace_json.h"

namespace mpsim::cli {
namespace {

struct ScheduleArgs {
  InputFiles files;
  std::vector<std::string> sets;
  bool comm = false;         ///< show: the program as simulated, communication included
  std::string output;        ///< export: the CSV file; empty = stdout
  std::string csv;           ///< import: the CSV file
  std::string trace;         ///< import: the Chrome trace of the imported order
  bool json = false;         ///< import: the report as JSON
};

void add_inputs(CLI::App& cmd, ScheduleArgs& args) {
  cmd.add_option("--topology", args.files.topology, "Topology YAML")->required();
  cmd.add_option("--model", args.files.model, "Model YAML")->required();
  cmd.add_option("--plan", args.files.plan, "Plan YAML")->required();
  cmd.add_option("--set", args.sets, "Override a field: plan.schedule=zb-v, plan.microbatches=16");
}

Inputs load(const ScheduleArgs& args) {
  std::vector<Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(parse_override(s, "--set"));
  return load_inputs(args.files, overrides);
}

void show(const ScheduleArgs& args) {
  const Inputs in = load(args);
  const plan::Plan& plan = *in.plan;
  schedule::Program program;
  if (args.comm) {
    const plan::Layout layout(plan);
    const engine::CostModel costs = engine::build_cost_model(in.cluster, in.model, plan, layout);
    program = engine::build_program(in.model, plan, costs, {});
  } else {
    program = schedule::compute_program(plan);
  }
  const std::string text = schedule::to_text(program, args.comm);
  std::size_t begin = 0;
  for (int rank = 0; rank < plan.degrees[plan::Axis::Pipeline]; ++rank) {
    const std::size_t end = text.find('\n', begin);
    std::cout << fmt::format("rank {}: {}\n", rank, text.substr(begin, end - begin));
    begin = end + 1;
  }
}

void export_csv(const ScheduleArgs& args) {
  const Inputs in = load(args);
  const std::string csv = interop::to_torch_csv(schedule::compute_program(*in.plan));
  if (args.output.empty()) {
    std::cout << csv;
  } else {
    write_file_atomically(args.output, csv);
  }
}

void import_csv(const ScheduleArgs& args) {
  const Inputs in = load(args);
  const schedule::Program order =
      interop::from_torch_csv(read_text_file(args.csv), args.csv, schedule::shape_of(*in.plan));
  engine::EngineOptions options;
  options.compute_program = &order;
  options.record_memory_timeline = args.json || !args.trace.empty();  // its report is simulate's
  // Every link's lane: the order's traffic is what a reader of an imported schedule looks at.
  const engine::Prediction prediction =
      args.trace.empty() ? engine::simulate(in.cluster, in.model, *in.plan, options)
                         : engine::simulate_traced(in.cluster, in.model, *in.plan, options, trace::LinkLanes::All);
  if (!args.trace.empty()) {
    write_trace_file(args.trace, prediction.timeline, prediction.report,
                     [&in](const trace::Report& r) { return prediction_json(in, r); });
  }
  if (args.json) {
    std::cout << prediction_json(in, prediction.report).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("The order of {} (stages placed as {} places them):\n\n", args.csv,
                           plan::to_string(in.plan->schedule));
  print_report(in, prediction.report);
}

}  // namespace

void add_schedule_commands(CLI::App& app) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* group = app.add_subcommand("schedule", "A plan's pipeline schedule: show it, export it to PyTorch, import one");
  group->require_subcommand(1);

  auto* show_cmd = group->add_subcommand("show", "Each pipeline rank's instruction stream (F, B, I, W, F&B pairs)");
  add_inputs(*show_cmd, *args);
  show_cmd->add_flag("--comm", args->comm, "The program as simulated: transfers, collectives and the optimizer step too");
  show_cmd->callback([args] { show(*args); });

  auto* export_cmd = group->add_subcommand(
      "export", "PyTorch's pipelining CSV of the plan's schedule (torch.distributed.pipelining, compute-only form)");
  add_inputs(*export_cmd, *args);
  export_cmd->add_option("-o,--output", args->output, "Write the CSV to this file (default: standard output)");
  export_cmd->callback([args] { export_csv(*args); });

  auto* import_cmd = group->add_subcommand(
      "import", "Simulate the plan with the order of a PyTorch pipelining CSV (the plan's schedule places the stages)");
  import_cmd->add_option("csv", args->csv, "The CSV: one row per pipeline rank, e.g. 0F0,0F1,1B0")->required();
  add_inputs(*import_cmd, *args);
  import_cmd->add_option("--trace", args->trace,
                         "Write the Chrome trace (opens in Perfetto; gzip when it ends in .gz)");
  import_cmd->add_flag("--json", args->json, "Print the report as JSON");
  import_cmd->callback([args] { import_csv(*args); });
}

}  // namespace mpsim::cli
