// mpsim plan check (the planner itself lands on `mpsim plan` with its own issue)
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::cli {
namespace {

nlohmann::ordered_json plan_json(const plan::Plan& p) {
  return {{"tensor", p.tensor},
          {"pipeline", p.pipeline},
          {"data", p.data},
          {"virtual_stages", p.virtual_stages},
          {"microbatches", p.microbatches},
          {"micro_batch_size", p.micro_batch},
          {"global_batch", p.global_batch},
          {"schedule", std::string(to_string(p.schedule))},
          {"partition", p.partition},
          {"recompute", std::string(model::to_string(p.recompute))},
          {"sequence_parallel", p.sequence_parallel},
          {"zero", p.zero},
          {"placement", plan::to_string(p.placement)}};
}

struct CheckArgs {
  std::string plan_file, topology_file, model_file;
  bool json = false;
};

void run_check(const CheckArgs& args) {
  const auto cluster = topology::load_topology_file(args.topology_file);
  const auto model = model::load_model_file(args.model_file);
  const auto spec = plan::load_plan_file(args.plan_file);
  const plan::Plan p = plan::resolve_plan(spec, cluster, model);
  if (args.json) {
    std::cout << plan_json(p).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{}: ok\n", args.plan_file);
  std::cout << fmt::format("  {} GPUs = tensor {} x pipeline {} x data {}; virtual stages {}; placement {}\n",
                           p.gpus(), p.tensor, p.pipeline, p.data, p.virtual_stages, plan::to_string(p.placement));
  std::cout << fmt::format("  global batch {} = micro {} x {} microbatches x data {}\n", p.global_batch, p.micro_batch,
                           p.microbatches, p.data);
  std::cout << fmt::format("  schedule {}, recompute {}, sequence parallel {}, ZeRO {}\n", to_string(p.schedule),
                           model::to_string(p.recompute), p.sequence_parallel ? "on" : "off", p.zero);
  std::vector<int> sizes;
  for (std::size_t s = 0; s + 1 < p.partition.size(); ++s) sizes.push_back(p.partition[s + 1] - p.partition[s]);
  std::cout << fmt::format("  layers per stage: [{}]\n", fmt::join(sizes, ", "));
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  CLI::App* plan_cmd = app.add_subcommand("plan", "Plans: check a plan file against a cluster and a model");
  plan_cmd->require_subcommand(1);
  auto args = std::make_shared<CheckArgs>();
  auto* check = plan_cmd->add_subcommand("check", "Validate a plan against a cluster and a model");
  check->add_option("file", args->plan_file, "Plan YAML file")->required();
  check->add_option("--topology", args->topology_file, "Topology YAML file")->required();
  check->add_option("--model", args->model_file, "Model YAML file")->required();
  check->add_flag("--json", args->json, "Print the completed plan as JSON");
  check->callback([args] { run_check(*args); });
}

}  // namespace mpsim::cli
