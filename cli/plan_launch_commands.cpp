// mpsim plan export (a plan as a framework's launch configuration, and the schedule CSV a TorchTitan
// TOML names beside it) and mpsim plan import (a framework's launch script or config as a plan and a
// model).
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "interop/export/export.h"
#include "interop/import/megatron_import.h"
#include "interop/import/sagemaker_import.h"
#include "interop/import/torchtitan_import.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/model/model_loader.h"
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

/// Where the schedule CSV a TorchTitan TOML names goes: beside it, the TOML's name with ".csv".
std::filesystem::path csv_beside_output(const std::filesystem::path& output) {
  std::filesystem::path csv = output;
  csv.replace_extension(".csv");
  if (csv == output) csv = output.string() + ".schedule.csv";
  return csv;
}

void run_export(const ExportArgs& args) {
  std::vector<Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(parse_override(s, "--set"));
  const Inputs in = load_inputs_on_gpus(args.files, overrides, args.gpus);
  const plan::PlanSpec spec = plan::load_plan_file(args.files.plan);
  const interop::Framework target = *interop::framework_named(args.target);  // one of them (CLI::IsMember)
  // A schedule TorchTitan has no class for runs from a CSV, which needs a file beside the TOML; on
  // stdout the export is the error that says so.
  const bool with_csv =
      target == interop::Framework::TorchTitan && interop::torchtitan_runs_from_csv(*in.plan) && !args.output.empty();
  const std::filesystem::path csv = with_csv ? csv_beside_output(args.output) : std::filesystem::path();
  const std::string text = interop::export_plan(
      target, {*in.plan, spec, in.model, args.files.model, interop::launch_shape(in.cluster), csv.filename().string()});
  if (args.output.empty()) {
    std::cout << text;
    return;
  }
  // The CSV first, so that the TOML never names a file that is not there.
  if (with_csv) write_file_atomically(csv, interop::torchtitan_schedule_csv(*in.plan));
  write_file_atomically(args.output, text);
}

struct ImportArgs {
  std::string from;
  std::string script;
  std::optional<int> gpus;
  std::string output;
  std::string model_output;
  std::string model;  ///< torchtitan: the model the job trains
  std::optional<std::int64_t> vocab_size;  ///< megatron: the tokenizer's vocabulary, before Megatron pads it
};

interop::ImportedLaunch import_torchtitan(const ImportArgs& args, const std::string& text) {
  std::optional<model::Model> model;
  if (!args.model.empty()) model = model::load_model_file(args.model);
  return interop::import_torchtitan(text, args.script,
                                    {args.gpus, model ? &*model : nullptr, interop::csv_beside(args.script)});
}

void run_import(const ImportArgs& args) {
  const std::string text = read_text_file(args.script);
  const bool sagemaker = args.from == "sagemaker";
  const bool torchtitan = args.from == "torchtitan";
  if ((sagemaker || torchtitan) && !args.model_output.empty()) {
    throw InputError({"--model-out", 0, 0}, "",
                     fmt::format("{} holds no model shape: --model-out is for --from megatron",
                                 sagemaker ? "SageMaker's parameters" : "TorchTitan's job config"));
  }
  if (args.from != "megatron" && args.vocab_size) {
    throw InputError({"--vocab-size", 0, 0}, "",
                     "--vocab-size is the tokenizer's vocabulary of a Megatron-LM script's model: it is for --from "
                     "megatron");
  }
  if (!torchtitan && !args.model.empty()) {
    throw InputError({"--model", 0, 0}, "", "--model is for --from torchtitan (the model its [model] section names)");
  }
  const interop::ImportedLaunch imported =
      torchtitan  ? import_torchtitan(args, text)
      : sagemaker ? interop::import_sagemaker(text, args.script, args.gpus)
                  : interop::import_megatron(text, args.script, args.gpus, !args.model_output.empty(), args.vocab_size);
  if (!args.model_output.empty()) write_file_atomically(args.model_output, imported.model_yaml);
  if (args.output.empty()) {
    std::cout << imported.plan_yaml;
  } else {
    write_file_atomically(args.output, imported.plan_yaml);
  }
  if (!imported.gpus && !sagemaker) {
    std::cerr << (torchtitan ? "mpsim: note: data_parallel_shard_degree is -1 (the ranks left over) and --gpus is not "
                               "given: the plan leaves the data-parallel size to the cluster\n"
                             : "mpsim: note: the script does not say how many GPUs it runs on (torchrun's --nnodes "
                               "and --nproc_per_node), so the degrees are not checked against them (--gpus gives "
                               "them); the plan leaves the data-parallel size to the cluster either way\n");
  }
  for (const std::string& note : imported.notes) std::cerr << "mpsim: note: " << note << "\n";
  if (!imported.ignored.empty()) {
    std::cerr << fmt::format("mpsim: note: {} {} set neither the plan nor the model: {}\n", imported.ignored.size(),
                             sagemaker ? "parameters" : torchtitan ? "settings" : "arguments",
                             fmt::join(imported.ignored, " "));
  }
}

}  // namespace

void add_plan_launch_commands(CLI::App& plan_cmd) {
  auto args = std::make_shared<ExportArgs>();
  auto* cmd = plan_cmd.add_subcommand(
      "export", "Write a plan as a framework's launch configuration (Megatron-LM script, NeMo / Megatron-Bridge "
                "overrides, DeepSpeed JSON, TorchTitan TOML, SageMaker parameters)");
  cmd->add_option("plan", args->files.plan, "Plan YAML file")->required();
  cmd->add_option("--to", args->target, "megatron, nemo, deepspeed, torchtitan or sagemaker")
      ->required()
      ->check(CLI::IsMember(plan::names_of(interop::kFrameworkNames)));
  cmd->add_option("--topology", args->files.topology,
                  "Topology YAML: the data degree and the nodes the launch spans come from it")
      ->required();
  cmd->add_option("--model", args->files.model, "Model YAML: its shape arguments and the layer split come from it")
      ->required();
  add_gpu_selection_options(*cmd, args->gpus);
  cmd->add_option("--set", args->sets, "Override a field first: plan.micro_batch=2, topology.nodes=16");
  cmd->add_option("-o,--output", args->output,
                  "Write the configuration to this file instead of printing it; for TorchTitan, a schedule it runs "
                  "from a CSV (zb-h1, zb-h2, zb-auto, sagemaker-interleaved, v-half, v-min) also writes FILE's name "
                  "with .csv beside it");
  cmd->callback([args] { run_export(*args); });

  auto import_args = std::make_shared<ImportArgs>();
  auto* import_cmd = plan_cmd.add_subcommand(
      "import", "Read a framework's launch script or config into a plan (and, with --model-out, a model)");
  import_cmd->add_option("script", import_args->script,
                         "The launch script (bash) for megatron; the estimator's distribution JSON for sagemaker; the "
                         "job config TOML for torchtitan (a schedule CSV it names is read from the TOML's folder)")
      ->required();
  import_cmd->add_option("--from", import_args->from, "The framework the file launches: megatron, sagemaker or torchtitan")
      ->required()
      ->check(CLI::IsMember({"megatron", "sagemaker", "torchtitan"}));
  import_cmd->add_option("--gpus", import_args->gpus,
                         "The GPUs the job runs on, when the file does not say (torchrun's --nnodes x --nproc_per_node)")
      ->check(CLI::PositiveNumber);
  import_cmd->add_option("-o,--output", import_args->output, "Write the plan YAML here instead of printing it");
  import_cmd->add_option("--model-out", import_args->model_output, "Write the model the shape arguments describe (megatron)");
  import_cmd->add_option("--vocab-size", import_args->vocab_size,
                         "megatron: the tokenizer's vocabulary, for a tokenizer the import does not know (or to "
                         "replace one it does); padded as Megatron-LM pads it (to --make-vocab-size-divisible-by x "
                         "tensor)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000'000}));
  import_cmd->add_option("--model", import_args->model,
                         "torchtitan: the model its [model] section builds; its blocks give TorchTitan's layer split "
                         "and training.seq_len is checked against it");
  import_cmd->callback([import_args] { run_import(*import_args); });
}

}  // namespace mpsim::cli
