// mpsim plan export (a plan as a framework's launch configuration) and mpsim plan import (a
// framework's launch script as a plan and a model).
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/launch/export.h"
#include "sim/plan/plan_loader.h"

namespace mpsim::cli {
namespace {

struct ExportArgs {
  InputFiles files;
  std::string target;
  std::vector<std::string> sets;
  GpuSelection gpus;
  std::string output;
};

/// The nodes the job's GPUs sit on, and the most GPUs it uses on one of them.
launch::LaunchShape launch_shape(const topology::Cluster& cluster) {
  std::map<int, int> per_node;
  for (const topology::DeviceId gpu : cluster.gpus()) ++per_node[cluster.device(gpu).node];
  launch::LaunchShape shape{static_cast<int>(per_node.size()), 0};
  for (const auto& [node, gpus] : per_node) shape.gpus_per_node = std::max(shape.gpus_per_node, gpus);
  return shape;
}

void run_export(const ExportArgs& args) {
  std::vector<Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(parse_override(s, "--set"));
  const Inputs in = load_inputs_on_gpus(args.files, overrides, args.gpus);
  const plan::PlanSpec spec = plan::load_plan_file(args.files.plan);
  launch::Framework target{};
  for (const auto& [name, framework] : launch::kFrameworkNames) {
    if (name == args.target) target = framework;
  }
  const std::string text =
      launch::export_plan(target, {*in.plan, spec, in.model, args.files.model, launch_shape(in.cluster)});
  if (args.output.empty()) {
    std::cout << text;
  } else {
    write_file_atomically(args.output, text);
  }
}

}  // namespace

void add_plan_launch_commands(CLI::App& plan_cmd) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = plan_cmd.add_subcommand(
      "export", "Write a plan as a framework's launch configuration (Megatron-LM script, NeMo / Megatron-Bridge "
                "overrides, DeepSpeed JSON, TorchTitan TOML, SageMaker parameters)");
  cmd->add_option("plan", args->files.plan, "Plan YAML file")->required();
  std::vector<std::string> targets;
  for (const auto& [name, framework] : launch::kFrameworkNames) targets.emplace_back(name);
  cmd->add_option("--to", args->target, "megatron, nemo, deepspeed, torchtitan or sagemaker")
      ->required()
      ->check(CLI::IsMember(targets));
  cmd->add_option("--topology", args->files.topology,
                  "Topology YAML: the data degree and the nodes the launch spans come from it")
      ->required();
  cmd->add_option("--model", args->files.model, "Model YAML: its shape arguments and the layer split come from it")
      ->required();
  add_gpu_selection_options(*cmd, args->gpus);
  cmd->add_option("--set", args->sets, "Override a field first: plan.micro_batch=2, topology.nodes=16");
  cmd->add_option("-o,--output", args->output, "Write the configuration to this file instead of printing it");
  cmd->callback([args] { run_export(*args); });
}

}  // namespace mpsim::cli
