// mpsim simulate: one what-if, or a sweep of them.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/report_text.h"
#include "cli/step_sampling.h"
#include "cli/table.h"
#include "cli/training_report.h"
#include "planner/explain.h"
#include "planner/step_distribution.h"
#include "sim/core/input_error.h"
#include "sim/engine/simulator.h"
#include "sim/engine/traced_simulation.h"
#include "sim/engine/training_step.h"
#include "sim/training/training_json.h"

namespace mpsim::cli {
namespace {

struct SimulateArgs {
  InputFiles files;
  std::vector<std::string> sets;
  GpuSelection gpus;  ///< --gpus N [--gpus-per-node K]
  std::vector<std::string> sweeps;  ///< --sweep, repeatable: a grid
  std::string trace;
  std::string collective = "auto";
  bool overlap_grad_reduce = false;
  bool unfold = false;
  bool json = false;
  training::TrainingRequest training;
  bool explain = false;
  std::string trace_links = "busiest";
  SamplingFlags sampling;  ///< --samples N --gpu-speed-spread S ...: the step as a distribution
  int threads = 0;         ///< for the sampled steps; <= 0: every core
};


engine::EngineOptions engine_options(const SimulateArgs& args) {
  engine::EngineOptions options;
  for (const auto& [name, algorithm] : engine::kCollectiveAlgorithmNames) {
    if (name == args.collective) options.collective = algorithm;
  }
  options.overlap_grad_reduce = args.overlap_grad_reduce;
  options.fold_replicas = !args.unfold;
  // Memory over time is part of the JSON report, in the trace's too; the text report does not show it.
  options.record_memory_timeline = args.json || !args.trace.empty();
  return options;
}

void run_one(const SimulateArgs& args, const std::vector<Override>& overrides) {
  const variability::SamplingRequest sampling = sampling_request(args.sampling);
  if (sampling.active() && !args.trace.empty()) {
    throw InputError({"--trace", 0, 0}, "", "a trace records one step, not sampled ones: leave out --samples");
  }
  const Inputs in = load_inputs_on_gpus(args.files, overrides, args.gpus);
  // With a trace, its run's report is the one printed (the engine is deterministic: the same).
  engine::Prediction prediction =
      args.trace.empty()
          ? engine::simulate(in.cluster, in.model, *in.plan, engine_options(args))
          : engine::simulate_traced(in.cluster, in.model, *in.plan, engine_options(args),
                                    link_lanes_named(args.trace_links));
  std::optional<planner::SampledSteps> sampled;
  if (sampling.active()) {
    sampled = std::move(
        planner::sample_steps(in.cluster, in.model, {*in.plan}, engine_options(args), sampling, args.threads).front());
  }
  training::TrainingStep step = engine::training_step(in.cluster, in.model, *in.plan, prediction.report);
  // Over a long run the steps average out: sampled, the run takes the mean step (docs/stragglers.md).
  if (sampled) step.step_time = TimeNs::seconds(sampled->summary.mean_s);
  const auto estimate = training::estimate_request(args.training, step);
  std::optional<planner::TimeBreakdown> explained;
  if (args.explain) explained = planner::breakdown(in.cluster, in.model, {0, *in.plan, prediction.report, {}});
  if (args.json) {
    nlohmann::ordered_json json = prediction_json(in, prediction.report);
    if (sampled) add_sampled_step_fields(json, sampling, sampled->summary);
    if (estimate) json["training"] = training::training_json(*estimate);
    if (explained) json["explain"] = breakdown_json(*explained);
    if (in.model.profile_spread) json["profile_spread"] = *in.model.profile_spread;
    std::cout << json.dump(2) << "\n";
  } else {
    print_report(in, prediction.report);
    if (sampled) std::cout << "\n" << sampled_step_text(sampling, sampled->summary, prediction.report.step_time_s);
    if (explained) {
      std::cout << fmt::format("\nWhere the step goes, on its busiest stage ({}): {}\n", explained->stage,
                               breakdown_line(*explained));
    }
    if (estimate) std::cout << "\n" << training_text(*estimate);
  }
  // Last, so the trace may take the report rather than a copy of every device's memory timeline.
  if (!args.trace.empty()) {
    write_trace_file(args.trace, prediction.timeline, std::move(prediction.report),
                     [&in](const trace::Report& r) { return prediction_json(in, r); });
  }
}

/// One --sweep KEY=V1,V2,...: commas inside [...] or {...} belong to the value.
struct Sweep {
  std::string key;
  std::vector<std::string> values;
};

Sweep parse_sweep(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) {
    throw InputError({"--sweep " + text, 0, 0}, "", "expected KEY=V1,V2,... e.g. plan.microbatches=8,16,32");
  }
  Sweep sweep{text.substr(0, eq), {}};
  std::string value;
  int depth = 0;
  for (const char c : text.substr(eq + 1)) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      sweep.values.push_back(value);
      value.clear();
    } else {
      value += c;
    }
  }
  sweep.values.push_back(value);
  return sweep;
}

/// Every --sweep's values in turn, the first sweep outermost: one run per point of the grid. A point
/// that fails (a value the inputs refuse) is reported in its row, naming the flag and value, and the
/// others run; when every point fails, the first failure is the error.
void run_sweep(const SimulateArgs& args, std::vector<Override> overrides) {
  if (sampling_request(args.sampling).active()) {
    throw InputError({"--samples", 0, 0}, "", "sampled steps are of one run: this does not combine with --sweep");
  }
  if (!args.trace.empty()) throw InputError({"--trace", 0, 0}, "", "--trace writes one run; it does not combine with --sweep");
  std::vector<Sweep> sweeps;
  for (const std::string& text : args.sweeps) sweeps.push_back(parse_sweep(text));
  std::vector<std::vector<std::string>> points{{}};
  for (const Sweep& sweep : sweeps) {
    std::vector<std::vector<std::string>> grown;
    for (const auto& point : points) {
      for (const std::string& v : sweep.values) {
        grown.push_back(point);
        grown.back().push_back(v);
      }
    }
    points = std::move(grown);
  }
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  Table table;
  std::vector<std::string> header;
  for (const Sweep& sweep : sweeps) header.push_back(sweep.key);
  header.insert(header.end(), {"step time", "TFLOP/s/GPU", "MFU", "idle", "bubble rate", "peak memory", "OOM"});
  if (!args.training.tokens.empty()) header.insert(header.end(), {"run (days)", "GPU-hours"});
  table.add_row(header);
  std::optional<InputError> first_failure;
  std::vector<std::string> failures;  ///< listed under the table
  int ran = 0;
  for (const auto& point : points) {
    nlohmann::ordered_json run;
    if (sweeps.size() == 1) {
      run["value"] = point.front();
    } else {
      run["values"] = point;
    }
    std::vector<std::string> row = point;
    try {
      std::vector<Override> with = overrides;
      for (std::size_t i = 0; i < sweeps.size(); ++i) {
        with.push_back(parse_override(sweeps[i].key + "=" + point[i], "--sweep"));
      }
      const Inputs in = load_inputs_on_gpus(args.files, with, args.gpus);
      const engine::Prediction prediction = engine::simulate(in.cluster, in.model, *in.plan, engine_options(args));
      const trace::Report& r = prediction.report;
      const auto estimate =
          training::estimate_request(args.training, engine::training_step(in.cluster, in.model, *in.plan, r));
      run["report"] = prediction_json(in, r);
      if (estimate) run["training"] = training::training_json(*estimate);
      row.insert(row.end(), {to_string(TimeNs::seconds(r.step_time_s)), fmt::format("{:.1f}", r.tflops_per_gpu),
                             percent(r.mfu), percent(r.bubble_fraction), percent(r.bubble_rate),
                             to_string(Bytes::bytes(r.peak_memory_bytes)), r.oom ? "yes" : "no"});
      if (estimate) {
        row.push_back(fmt::format("{:.1f}", estimate->wall_time.to_seconds() / 86400));
        row.push_back(fmt::format("{:.0f}", estimate->gpu_hours));
      }
      ++ran;
    } catch (const InputError& e) {
      if (!first_failure) first_failure = e;
      run["error"] = e.what();
      failures.push_back(e.what());
      row.push_back(fmt::format("failed [{}]", failures.size()));
    }
    runs.push_back(std::move(run));
    table.add_row(std::move(row));
  }
  if (ran == 0 && first_failure) throw *first_failure;
  if (args.json) {
    nlohmann::ordered_json keys = nlohmann::ordered_json::array();
    for (const Sweep& sweep : sweeps) keys.push_back(sweep.key);
    std::cout << nlohmann::ordered_json{{"sweep", sweeps.size() == 1 ? keys.front() : keys}, {"runs", runs}}.dump(2)
              << "\n";
  } else {
    std::cout << table.render();
    for (std::size_t i = 0; i < failures.size(); ++i) std::cout << fmt::format("[{}] {}\n", i + 1, failures[i]);
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand("simulate", "Predict one training step: time, bubbles, memory, link traffic");
  cmd->add_option("--topology", args->files.topology, "Topology YAML")->required();
  cmd->add_option("--model", args->files.model, "Model YAML")->required();
  cmd->add_option("--plan", args->files.plan, "Plan YAML")->required();
  add_profile_option(*cmd, args->files.profile);
  cmd->add_option("--set", args->sets, "Override a field: plan.microbatches=32, topology.node.nics.bandwidth=\"100 Gb/s\"");
  add_gpu_selection_options(*cmd, args->gpus);
  cmd->add_option("--sweep", args->sweeps,
                  "One run per value: KEY=V1,V2,... (a table, or JSON with --json); several make a grid");
  cmd->add_option("--trace", args->trace, "Write the Chrome trace (opens in Perfetto; gzip when it ends in .gz)");
  add_trace_links_option(*cmd, args->trace_links);
  cmd->add_option("--collective", args->collective,
                  "Collective algorithm: auto (NCCL's choice), ring, tree, hierarchical, nvls")
      ->check(CLI::IsMember([] {
        std::vector<std::string> words;
        for (const auto& [name, algorithm] : engine::kCollectiveAlgorithmNames) words.emplace_back(name);
        return words;
      }()));
  cmd->add_flag("--overlap-grad-reduce", args->overlap_grad_reduce, "Overlap gradient all-reduce with backward");
  cmd->add_flag("--unfold", args->unfold, "Simulate every data-parallel replica instead of one for all");
  cmd->add_flag("--json", args->json, "Print the report as JSON");
  cmd->add_flag("--explain", args->explain,
                "Where the step goes on the busiest stage: compute, bubble (the schedule's), exposed communication");
  add_training_options(*cmd, args->training);
  add_sampling_options(*cmd, args->sampling);
  cmd->add_option("--threads", args->threads, "With --samples: simulation threads (default: all cores)")
      ->check(CLI::PositiveNumber);
  cmd->callback([args] {
    std::vector<Override> overrides;
    for (const auto& s : args->sets) overrides.push_back(parse_override(s, "--set"));
    if (args->sweeps.empty()) {
      run_one(*args, overrides);
    } else {
      run_sweep(*args, overrides);
    }
  });
}

}  // namespace mpsim::cli
