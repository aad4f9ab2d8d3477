// mpsim plan export (a plan as a framework's launch configuration) and mpsim plan import (a
// framework's launch script as a plan and a model).
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/launch/export.h"
#include "sim/launch/megatron_import.h"
#include "sim/launch/sagemaker_import.h"
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
      launch::export_plan(target, {*in.plan, spec, in.model, args.files.model, launch::launch_shape(in.cluster)});
  if (args.output.empty()) {
    std::cout << text;
  } else {
    write_file_atomically(args.output, text);
  }
}

struct ImportArgs {
  std::string from;
  std::string script;
  std::optional<int> gpus;
  std::string output;
  std::string model_output;
};

void run_import(const ImportArgs& args) {
  const std::string text = read_text_file(args.script);
  const bool sagemaker = args.from == "sagemaker";
  if (sagemaker && !args.model_output.empty()) {
    throw InputError({"--model-out", 0, 0}, "", "SageMaker's parameters hold no model shape: --model-out is for --from megatron");
  }
  const launch::ImportedLaunch imported =
      sagemaker ? launch::import_sagemaker(text, args.script, args.gpus)
                : launch::import_megatron(text, args.script, args.gpus, !args.model_output.empty());
  if (!args.model_output.empty()) write_file_atomically(args.model_output, imported.model_yaml);
  if (args.output.empty()) {
    std::cout << imported.plan_yaml;
  } else {
    write_file_atomically(args.output, imported.plan_yaml);
  }
  if (!imported.gpus && !sagemaker) {
    std::cerr << "mpsim: note: the script does not say how many GPUs it runs on (torchrun's --nnodes and "
                 "--nproc_per_node): the plan leaves the data-parallel size to the cluster; --gpus sets it\n";
  }
  if (!imported.ignored.empty()) {
    std::cerr << fmt::format("mpsim: note: {} {} set neither the plan nor the model: {}\n", imported.ignored.size(),
                             sagemaker ? "parameters" : "arguments", fmt::join(imported.ignored, " "));
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

  auto import_args = std::make_shared<ImportArgs>();
  auto* import_cmd = plan_cmd.add_subcommand(
      "import", "Read a framework's launch script into a plan (and, with --model-out, a model)");
  import_cmd->add_option("script", import_args->script,
                         "The launch script (bash) for megatron; the estimator's distribution JSON for sagemaker")
      ->required();
  import_cmd->add_option("--from", import_args->from, "The framework the file launches: megatron or sagemaker")
      ->required()
      ->check(CLI::IsMember({"megatron", "sagemaker"}));
  import_cmd->add_option("--gpus", import_args->gpus,
                         "The GPUs the job runs on, when the script does not say (torchrun's --nnodes x --nproc_per_node)")
      ->check(CLI::PositiveNumber);
  import_cmd->add_option("-o,--output", import_args->output, "Write the plan YAML here instead of printing it");
  import_cmd->add_option("--model-out", import_args->model_output, "Write the model the shape arguments describe");
  import_cmd->callback([import_args] { run_import(*import_args); });
}

}  // namespace mpsim::cli
