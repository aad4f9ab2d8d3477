// mpsim plan: the planner (search for the best plan), and mpsim plan check (validate a plan file).
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/cluster_parts_report.h"
#include "cli/kinds_alone_report.h"
#include "cli/plan_shards.h"
#include "cli/report_text.h"
#include "cli/step_sampling.h"
#include "cli/table.h"
#include "cli/training_report.h"
#include "cli/verify_top.h"
#include "executor/interpreter/mpi_runtime.h"
#include "executor/launch/mpirun_launch.h"
#include "interop/export/export.h"
#include "planner/catalog.h"
#include "planner/catalog_search.h"
#include "planner/cost_search.h"
#include "planner/equivalent_plans.h"
#include "planner/explain.h"
#include "planner/headroom_choice.h"
#include "planner/kind_alone.h"
#include "planner/memory_margin.h"
#include "planner/search.h"
#include "planner/sensitivity.h"
#include "planner/step_distribution.h"
#include "planner/thread_pool.h"
#include "sim/calibration/prediction_band.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/engine/simulator.h"
#include "sim/engine/traced_simulation.h"
#include "sim/engine/training_step.h"
#include "sim/model/model_loader.h"
#include "sim/plan/degrees_text.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_json.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"
#include "sim/trace/trace_json.h"
#include "sim/training/training_json.h"

namespace mpsim::cli {
namespace {

// ---- mpsim plan check ------------------------------------------------------------------------

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
    std::cout << plan::plan_json(p).dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("{}: ok\n", args.plan_file);
  std::cout << fmt::format("  {} GPUs = tensor {} x pipeline {} x data {}; virtual stages {}; placement {}\n", p.gpus(),
                           p.degrees[plan::Axis::Tensor], p.degrees[plan::Axis::Pipeline], p.degrees[plan::Axis::Data],
                           p.virtual_stages, plan::to_string(p.placement));
  std::cout << fmt::format("  global batch {} = micro {} x {} microbatches x data {}\n", p.global_batch, p.micro_batch,
                           p.microbatches, p.degrees[plan::Axis::Data]);
  if (p.uneven_shares()) {
    std::cout << fmt::format("  microbatches by data-parallel replica: [{}]\n", fmt::join(p.replica_microbatches, ", "));
  }
  std::cout << fmt::format("  schedule {}, recompute {}, sequence parallel {}, ZeRO {}\n", to_string(p.schedule),
                           model::to_string(p.recompute), p.sequence_parallel ? "on" : "off", p.zero);
  std::vector<int> sizes;
  for (std::size_t s = 0; s + 1 < p.partition.size(); ++s) sizes.push_back(p.partition[s + 1] - p.partition[s]);
  std::cout << fmt::format("  layers per stage: [{}]\n", fmt::join(sizes, ", "));
}

// ---- mpsim plan (the planner) ----------------------------------------------------------------

struct PlanArgs {
  InputFiles files{"topologies/4x-p4d.yaml", "configs/models/gpt3-13b.yaml", "", ""};
  std::vector<std::string> sets;
  int global_batch = 256;
  GpuSelection gpus;  ///< --gpus N [--gpus-per-node K]
  std::string optimize = "speed";
  std::string schedules;
  std::string recompute;
  std::string zero;  ///< --zero: only these ZeRO stages
  std::string precisions;
  std::string attention_kernel;  ///< fa2 | fa3 | fa4; empty: the GPU kind's default rate
  std::string moe_dispatcher = "alltoall";  ///< alltoall | deepep | hybridep
  bool precision_aware_optimizer = false;   ///< --precision-aware-optimizer
  std::string exp_avg_dtype = "fp32";       ///< --exp-avg-dtype
  std::string exp_avg_sq_dtype = "fp32";    ///< --exp-avg-sq-dtype
  std::string framework;  ///< --framework: keep only plans it runs and exports; empty: any
  std::vector<std::string> defaults_used;  ///< "--topology topologies/4x-p4d.yaml": inputs not given, as taken
  std::string tensor, context, pipeline, expert;  ///< --tensor 2,4 ...: only these degrees of the axis
  int max_tensor = 0;
  int max_context = 0;
  int max_expert = 0;
  int max_micro_batch = 0;
  int top = 10;
  std::string pareto = "near";
  std::string memory_reserve;
  double memory_margin_percent = 100 * planner::kDefaultMemoryMargin;  ///< --memory-margin
  std::optional<double> rank_tolerance_percent;  ///< --rank-tolerance; unset: the model's group's (prediction_band.h)
  std::string output;
  std::string trace;
  bool json = false;
  bool explain = false;
  bool robust = false;  ///< --robust: rank the plans found by the worse of their two what-ifs
  std::string baseline;  ///< --baseline PLAN: the plan the team runs today, shown beside the ranking
  int threads = 0;
  training::TrainingRequest training;
  std::string deadline;  ///< --deadline, with --optimize cost or --catalog
  std::string catalog;   ///< --catalog: choose the instance type and count too (docs/budget.md)
  std::string budget;    ///< --budget, with --catalog: "2e6 USD"
  bool mix_instance_types = false;  ///< --mix-instance-types, with --catalog: jobs of two types too
  std::vector<int> instance_counts;  ///< --instance-counts, with --catalog: only these counts of a type
  std::string trace_links = "busiest";
  int verify_top = 0;         ///< --verify-top K
  std::string verify_backend = "cpu";
  std::optional<int> verify_ranks;
  SamplingFlags sampling;  ///< --samples N --gpu-speed-spread S ...: each ranked plan's step as a distribution
  bool no_single_kind = false;  ///< --no-single-kind: on several GPU kinds, do not also search each kind alone or parts
};


/// The words of a comma-separated list, the spaces around each removed.
std::vector<std::string> comma_words(const std::string& list) {
  std::vector<std::string> words;
  std::stringstream in(list);
  std::string word;
  while (std::getline(in, word, ',')) {
    word.erase(0, word.find_first_not_of(' '));
    word.erase(word.find_last_not_of(' ') + 1);
    words.push_back(std::move(word));
  }
  return words;
}

/// A comma-separated list of `names`' words (spaces around them ignored, repeats dropped), or an
/// InputError naming `flag`: "unknown <what> '<word>'; known: ...".
template <class Names>
auto parse_named_list(const std::string& list, const std::string& flag, std::string_view what, const Names& names) {
  std::vector<std::remove_cvref_t<decltype(std::begin(names)->second)>> out;
  for (const std::string& word : comma_words(list)) {
    const auto it = std::find_if(std::begin(names), std::end(names), [&](const auto& entry) { return entry.first == word; });
    if (it == std::end(names)) {
      std::vector<std::string> known;
      for (const auto& entry : names) known.emplace_back(entry.first);
      throw InputError({flag + " " + list, 0, 0}, "",
                       fmt::format("unknown {} '{}'; known: {}", what, word, fmt::join(known, ", ")));
    }
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  return out;
}

std::vector<plan::ScheduleKind> parse_schedules(const std::string& list) {
  return parse_named_list(list, "--schedules", "schedule", plan::kScheduleNames);
}

std::vector<model::Recompute> parse_recompute(const std::string& list) {
  return parse_named_list(list, "--recompute", "recomputation", model::kRecomputeNames);
}

/// ZeRO stages as `--zero` names them (the plan field `zero`'s values).
constexpr std::pair<std::string_view, int> kZeroStages[] = {{"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}};

std::vector<int> parse_zero(const std::string& list) { return parse_named_list(list, "--zero", "ZeRO stage", kZeroStages); }

/// The flags that hold an axis to the degrees they list, and where PlanArgs keeps each list.
struct FixedAxisFlag {
  plan::Axis axis;
  const char* flag;
  std::string PlanArgs::*list;
  const char* help;
};
constexpr FixedAxisFlag kFixedAxisFlags[] = {
    {plan::Axis::Tensor, "--tensor", &PlanArgs::tensor, "Only these tensor-parallel degrees, e.g. 8 or 4,8"},
    {plan::Axis::Context, "--context", &PlanArgs::context, "Only these context-parallel degrees, e.g. 1,2"},
    {plan::Axis::Pipeline, "--pipeline", &PlanArgs::pipeline, "Only these pipeline degrees (stages), e.g. 4"},
    {plan::Axis::Expert, "--expert", &PlanArgs::expert, "Only these expert-parallel degrees (MoE models), e.g. 8"},
};

/// A comma-separated list of degrees (positive integers; repeats dropped), or an InputError naming `flag`.
std::vector<int> parse_degrees(const std::string& list, const std::string& flag) {
  std::vector<int> out;
  for (const std::string& word : comma_words(list)) {
    int degree = 0;
    const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), degree);
    if (error != std::errc() || end != word.data() + word.size() || degree < 1) {
      throw InputError({flag + " " + list, 0, 0}, "", fmt::format("'{}' is not a degree (a whole number, at least 1)", word));
    }
    if (std::find(out.begin(), out.end(), degree) == out.end()) out.push_back(degree);
  }
  return out;
}

/// Refuses a fixed degree no plan on the inputs' cluster and model can have, naming its flag.
void check_fixed_degrees(const PlanArgs& args, const Inputs& in) {
  for (const FixedAxisFlag& f : kFixedAxisFlags) {
    const std::string& list = args.*f.list;
    if (list.empty()) continue;
    for (const int degree : parse_degrees(list, f.flag)) {
      if (auto why = planner::fixed_degree_error(f.axis, degree, in.cluster, in.model)) {
        throw InputError({fmt::format("{} {}", f.flag, list), 0, 0}, "", *why);
      }
    }
  }
}

std::vector<plan::Precision> parse_precisions(const std::string& list) {
  return parse_named_list(list, "--precisions", "precision", plan::kPrecisionNames);
}

/// A default input file: relative to the working directory when it exists there (the repository
/// root), else to the source tree the command was built from, so `mpsim plan` works from anywhere.
std::string default_file(const std::string& relative) {
  if (std::filesystem::exists(relative)) return relative;
  return std::string(MPSIM_DATA_DIR) + "/" + relative;
}

/// As the plan check: why a GPU kind of `cluster` has no rate for the generation --attention-kernel
/// names, or nothing.
std::optional<std::string> attention_kernel_error(const PlanArgs& args, const topology::Cluster& cluster) {
  if (args.attention_kernel.empty()) return std::nullopt;
  const auto generation = *topology::parse_attention_generation(args.attention_kernel);  // CLI::IsMember
  for (const topology::GpuKind& gpu : cluster.gpu_kinds()) {
    if (auto missing = plan::attention_rate_error(gpu, generation, "--attention-kernel")) return missing;
  }
  return std::nullopt;
}

void check_attention_kernel(const PlanArgs& args, const Inputs& in) {
  if (const auto missing = attention_kernel_error(args, in.cluster)) {
    throw InputError({"--attention-kernel " + args.attention_kernel, 0, 0}, "", *missing);
  }
}

/// The cluster and model, with --set applied and the node count cut to --gpus.
Inputs load_planner_inputs(const PlanArgs& args) {
  std::vector<Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(parse_override(s, "--set"));
  InputFiles files = args.files;
  const PlanArgs defaults;
  if (files.topology == defaults.files.topology) files.topology = default_file(files.topology);
  if (files.model == defaults.files.model) files.model = default_file(files.model);
  Inputs in = load_inputs_on_gpus(files, std::move(overrides), args.gpus);
  check_attention_kernel(args, in);
  return in;
}

planner::PlannerOptions planner_options(const PlanArgs& args) {
  planner::PlannerOptions o;
  o.space.global_batch = args.global_batch;
  o.space.max_tensor = args.max_tensor;
  o.space.max_context = args.max_context;
  o.space.max_expert = args.max_expert;
  for (const FixedAxisFlag& f : kFixedAxisFlags) {
    if (!(args.*f.list).empty()) o.space.only_degrees[f.axis] = parse_degrees(args.*f.list, f.flag);
  }
  o.space.max_micro_batch = args.max_micro_batch;
  // Cost: at one job size the fastest plan is the cheapest (GPU-hours grow with the step), so each
  // size is searched for speed (planner/cost_search.h).
  o.space.objective = args.optimize == "memory" ? plan::Objective::Memory : plan::Objective::Speed;
  if (!args.schedules.empty()) o.space.schedules = parse_schedules(args.schedules);
  if (!args.recompute.empty()) o.space.recompute = parse_recompute(args.recompute);
  if (!args.zero.empty()) o.space.zero = parse_zero(args.zero);
  if (!args.precisions.empty()) o.space.precisions = parse_precisions(args.precisions);
  if (!args.attention_kernel.empty()) {
    o.space.attention_kernel = topology::parse_attention_generation(args.attention_kernel);
  }
  for (const auto& [name, dispatcher] : plan::kMoeDispatcherNames) {
    if (args.moe_dispatcher == name) o.space.dispatcher = dispatcher;  // one of them (CLI::IsMember)
  }
  if (!args.framework.empty()) o.space.cross_entropy = interop::loss_of(*interop::framework_named(args.framework));
  o.space.precision_aware_optimizer = args.precision_aware_optimizer;
  for (const auto& [flag, text, dtype] : {std::tuple{"--exp-avg-dtype", args.exp_avg_dtype, &o.space.exp_avg_dtype},
                                          std::tuple{"--exp-avg-sq-dtype", args.exp_avg_sq_dtype, &o.space.exp_avg_sq_dtype}}) {
    for (const auto& [name, value] : plan::kStateDtypeNames) {
      if (text == name) *dtype = value;  // one of them (CLI::IsMember)
    }
    if (*dtype != plan::StateDtype::Fp32 && !args.precision_aware_optimizer) {
      throw InputError({fmt::format("{} {}", flag, text), 0, 0}, "",
                       "moments other than fp32 need --precision-aware-optimizer (Megatron-Core's OptimizerConfig)");
    }
  }
  o.top = args.top;
  o.exact_pareto = args.pareto != "simulated";
  o.pareto_tolerance = args.pareto == "near" ? planner::kNearParetoTolerance : 0.0;
  o.threads = args.threads;
  if (!args.memory_reserve.empty()) {
    const auto reserve = parse_bytes(args.memory_reserve);
    if (!reserve.ok()) throw InputError({"--memory-reserve " + args.memory_reserve, 0, 0}, "", reserve.error);
    o.memory_reserve = reserve.value;
  }
  o.memory_margin = args.memory_margin_percent / 100;
  return o;
}

/// What a plan overlaps: g(radient reduction), p(arameter gather), t(ensor collectives), e(xpert
/// all-to-alls), or "-".
std::string overlap_cell(const plan::Plan& p) {
  std::string out;
  if (p.overlap_grad_reduce) out += 'g';
  if (p.overlap_param_gather) out += 'p';
  if (p.overlap_tensor_comm) out += 't';
  if (p.overlap_moe_expert_comm) out += 'e';
  return out.empty() ? "-" : out;
}

std::vector<std::string> plan_cells(const plan::Plan& p) {
  return {std::to_string(p.degrees[plan::Axis::Tensor]),
          std::to_string(p.degrees[plan::Axis::Context]),
          std::to_string(p.degrees[plan::Axis::Pipeline]),
          std::to_string(p.degrees[plan::Axis::Data]),
          p.degrees[plan::Axis::Expert] > 1
              ? fmt::format("{}/{}", p.degrees[plan::Axis::Expert], p.degrees[plan::Axis::ExpertTensor])
              : "-",
          std::to_string(p.virtual_stages),
          std::to_string(p.micro_batch),
          plan::microbatches_text(p),
          std::string(plan::to_string(p.schedule)),
          std::string(model::to_string(p.recompute)),
          p.sequence_parallel ? "on" : "off",
          std::to_string(p.zero),
          overlap_cell(p),
          std::string(plan::to_string(p.precision)),
          plan::to_string(p.placement)};
}

/// ep: expert / expert_tensor degrees of MoE plans; sp: sequence parallelism; precision: the GEMMs'.
const std::vector<std::string> kPlanHeader{"tp",   "cp",   "pp",      "dp",        "ep",       "v",
                                           "mb",   "m",    "schedule", "recompute", "sp",       "zero",
                                           "overlap", "precision", "placement"};

/// A merged row's plan cells: the placements (and, with one pipeline stage, the schedule names) that
/// give the same plan, listed.
std::vector<std::string> merged_cells(const planner::EquivalentPlans& group) {
  auto cells = plan_cells(group.plan.plan);
  const auto schedule = std::find(kPlanHeader.begin(), kPlanHeader.end(), "schedule") - kPlanHeader.begin();
  cells[static_cast<std::size_t>(schedule)] = planner::schedules_text(group);
  cells.back() = planner::placements_text(group);
  return cells;
}

/// The ranking with equivalent plans (planner/equivalent_plans.h) in one row, their placements listed.
std::string ranked_table(const std::vector<planner::Evaluated>& ranked,
                         const std::map<std::size_t, planner::Sensitivity>& sensitivities,
                         const std::map<std::size_t, variability::StepDistributionSummary>& sampled) {
  const std::vector<planner::EquivalentPlans> merged = planner::merge_equivalent(ranked);
  Table t;
  // net/2 and gpu+15%: the step's change with every network link at half its bandwidth, and with one
  // GPU 15 % slow (planner/sensitivity.h); with --samples, p95 and p95/p50 of the sampled steps.
  std::vector<std::string> header{"#", "step time", "net/2", "gpu+15%"};
  if (!sampled.empty()) header.insert(header.end(), {"p95", "p95/p50"});
  header.insert(header.end(), {"idle", "TFLOP/s/GPU", "MFU", "peak memory"});
  header.insert(header.end(), kPlanHeader.begin(), kPlanHeader.end());
  t.add_row(header);
  for (std::size_t i = 0; i < merged.size(); ++i) {
    const trace::Report& r = merged[i].plan.report;
    const planner::Sensitivity& s = sensitivities.at(merged[i].plan.id);
    const auto change = [&](double step_s) { return fmt::format("{:+.1f}%", 100.0 * (step_s / r.step_time_s - 1.0)); };
    std::vector<std::string> row{std::to_string(i + 1), to_string(TimeNs::seconds(r.step_time_s)),
                                 change(s.half_network_step_s), change(s.slow_gpu_step_s)};
    if (!sampled.empty()) {
      const variability::StepDistributionSummary& d = sampled.at(merged[i].plan.id);
      row.insert(row.end(), {to_string(TimeNs::seconds(d.p95_s)), fmt::format("{:.3f}", d.p95_s / d.p50_s)});
    }
    row.insert(row.end(), {percent(r.bubble_fraction), fmt::format("{:.1f}", r.tflops_per_gpu), percent(r.mfu),
                           to_string(Bytes::bytes(r.peak_memory_bytes))});
    const auto cells = merged_cells(merged[i]);
    row.insert(row.end(), cells.begin(), cells.end());
    t.add_row(row);
  }
  std::string out = t.render();
  if (merged.size() < ranked.size()) {
    out += fmt::format("({} of the {} ranked plans differ from one above only in placement (or, with one pipeline "
                       "stage, in the schedule's name), with the same peak memory and a step within {}: listed in its "
                       "row)\n",
                       ranked.size() - merged.size(), ranked.size(), percent(planner::kEquivalentStepShare));
  }
  return out;
}

/// The verified plans, fastest measured first, beside their predictions.
std::string verified_table(const std::vector<VerifiedPlan>& verified) {
  Table t;
  std::vector<std::string> header{"measured #", "predicted #", "predicted", "measured", "error"};
  header.insert(header.end(), kPlanHeader.begin(), kPlanHeader.end());
  t.add_row(header);
  for (std::size_t i = 0; i < verified.size(); ++i) {
    const VerifiedPlan& v = verified[i];
    const double predicted = v.evaluated.report.step_time_s;
    std::vector<std::string> row{v.measured_step_s ? std::to_string(i + 1) : "-", std::to_string(v.predicted_rank),
                                 to_string(TimeNs::seconds(predicted)),
                                 v.measured_step_s ? to_string(TimeNs::seconds(*v.measured_step_s)) : "failed",
                                 v.measured_step_s ? fmt::format("{:+.1f}%", 100.0 * (predicted / *v.measured_step_s - 1.0))
                                                   : "-"};
    const auto cells = plan_cells(v.evaluated.plan);
    row.insert(row.end(), cells.begin(), cells.end());
    t.add_row(row);
  }
  std::string out = t.render();
  for (const VerifiedPlan& v : verified) {
    if (!v.measured_step_s) out += fmt::format("predicted #{} did not run: {}\n", v.predicted_rank, v.failure);
  }
  return out;
}

/// What the front covers, after its title.
std::string pareto_scope(const planner::PlannerOptions& options) {
  if (!options.exact_pareto) return " (of the plans simulated for the ranking)";
  if (options.pareto_tolerance <= 0) return "";
  return fmt::format(" (to within {:g}%: every plan that fits has one here that needs no more memory and is at most "
                     "{:g}% slower)",
                     100 * options.pareto_tolerance, 100 * options.pareto_tolerance);
}

std::string pareto_table(const std::vector<planner::Evaluated>& front) {
  Table t;
  std::vector<std::string> header{"peak memory", "step time"};
  header.insert(header.end(), kPlanHeader.begin(), kPlanHeader.end());
  t.add_row(header);
  for (const auto& group : planner::merge_equivalent(front)) {
    const planner::Evaluated& e = group.plan;
    std::vector<std::string> row{to_string(Bytes::bytes(e.report.peak_memory_bytes)),
                                 to_string(TimeNs::seconds(e.report.step_time_s))};
    const auto cells = merged_cells(group);
    row.insert(row.end(), cells.begin(), cells.end());
    t.add_row(row);
  }
  return t.render();
}

/// The warning under the ranking for the best plan only the memory margin left out (it beats `first`,
/// the ranking's #1), with its row.
std::string margin_warning(const planner::Evaluated& left_out, const planner::Evaluated& first, Bytes capacity,
                           const planner::PlannerOptions& options) {
  return fmt::format("\nWarning: a plan {:.1f}% faster than #1 is not ranked: its peak, {} of {}, is within the {:g}% "
                     "memory margin, and measured peaks run above predicted ones (docs/validation.md, \"Memory\"), so "
                     "it may run out of memory; --memory-margin 0 ranks it:\n",
                     100.0 * (1.0 - left_out.report.step_time_s / first.report.step_time_s),
                     to_string(Bytes::bytes(left_out.report.peak_memory_bytes)), to_string(capacity),
                     100 * options.memory_margin) +
         pareto_table({left_out});
}

/// The share of the fastest plan's step within which plans count as ones the predictions cannot order:
/// --rank-tolerance, else the fastest plan's group's (calibration::ranking_tolerance).
double rank_tolerance(const PlanArgs& args, const Inputs& in, const planner::Evaluated& fastest) {
  if (args.rank_tolerance_percent) return *args.rank_tolerance_percent / 100;
  return calibration::ranking_tolerance(calibration::prediction_group(in.model, fastest.plan)).share;
}

/// The note under the ranking when #1 is not the fastest plan found but the choice of
/// planner/headroom_choice.h among the plans within the tolerance.
std::string headroom_note(const planner::HeadroomChoice& choice, const PlanArgs& args) {
  const auto bytes = [](std::int64_t b) { return to_string(Bytes::bytes(b)); };
  const std::string basis = args.rank_tolerance_percent
                                ? std::string("--rank-tolerance")
                                : std::string("the median error of mpsim's ratio between two published runs of one model "
                                              "on one cluster: docs/planner.md, \"Plans the predictions cannot order\"");
  const double worse = 1 / (1 - planner::kWorstMeasuredUnderPrediction) - 1;
  std::string why;
  if (!planner::safe_from_worst_memory_error(choice.chosen.report)) {
    why = fmt::format("none of them would fit a peak {:.0f}% higher than predicted, as the worst measured peak so far "
                      "was (docs/validation.md, \"Memory\"), and #1 leaves the most memory free: {} on its fullest "
                      "GPU, where the fastest leaves {}",
                      100 * worse, bytes(planner::memory_headroom(choice.chosen.report)),
                      bytes(planner::memory_headroom(choice.fastest.report)));
  } else if (planner::safe_from_worst_memory_error(choice.fastest.report)) {
    // The fastest is safe too: #1 won the tie-break among plans of the same step (headroom_choice.h).
    const std::string tie_break =
        planner::has_more_headroom(choice.chosen.report, choice.fastest.report)
            ? fmt::format("#1 leaves {} more memory free on its fullest GPU",
                          bytes(planner::memory_headroom(choice.chosen.report) -
                                planner::memory_headroom(choice.fastest.report)))
            : fmt::format("#1 has fewer moving parts ({} against {})", planner::moving_parts(choice.chosen.plan),
                          planner::moving_parts(choice.fastest.plan));
    why = fmt::format("both would still fit if their peaks were {:.0f}% higher, as the worst measured peak so far was "
                      "(docs/validation.md, \"Memory\"); of the plans within {:.1f}% of the fastest safe one, {}",
                      100 * worse, 100 * planner::kEquivalentStepShare, tie_break);
  } else {
    why = fmt::format("#1 is the fastest of them whose peak, {}, would still fit if it were {:.0f}% higher, as the "
                      "worst measured peak so far was (docs/validation.md, \"Memory\")",
                      bytes(choice.chosen.report.peak_memory_bytes), 100 * worse);
  }
  return fmt::format("\n#1 is {:.1f}% slower than the fastest plan found ({:.3g} s, peak {}): the {} plans within {:.1f}% "
                     "of that one are ones the predictions cannot order ({}), and {}. --rank-tolerance 0 ranks by step "
                     "time alone.\n",
                     100 * (choice.chosen.report.step_time_s / choice.fastest.report.step_time_s - 1),
                     choice.fastest.report.step_time_s, bytes(choice.fastest.report.peak_memory_bytes), choice.within,
                     100 * choice.tolerance, basis, why);
}

/// "plan + report": the report (docs/simulator.md, "The report") with the complete plan under "plan".
/// `full` keeps the per-device and per-link lists.
nlohmann::ordered_json evaluated_json(const planner::Evaluated& e, bool full,
                                      const std::optional<training::TrainingEstimate>& estimate,
                                      const Inputs* in = nullptr) {
  nlohmann::ordered_json out = trace::report_json(e.report);
  if (in != nullptr) add_prediction_fields(out, *in, &e.plan, e.report);  // the bands, as simulate gives them
  if (!full) {
    out.erase("devices");
    out.erase("links");
  }
  out["plan"] = plan::plan_json(e.plan);
  out["lower_bound_s"] = e.estimate.lower_bound.to_seconds();
  if (estimate) out["training"] = training::training_json(*estimate);
  return out;
}

/// Clears the progress line it wrote, when it wrote one.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(const planner::SearchProgress& p) {
    if (!enabled_) return;
    // Before the first simulation the planner estimates every candidate: at 2048 GPUs that alone is a minute.
    std::cerr << (p.simulating ? fmt::format("\rsearching: {} simulated of at most {} plans that fit; best {}{}; {:.0f} s",
                                             p.evaluated, p.feasible, seconds(p.best_step_time_s),
                                             p.front_memory.count() > 0
                                                 ? fmt::format("; front at {}", to_string(p.front_memory))
                                                 : std::string(),
                                             p.elapsed_s)
                               : fmt::format("\rsearching: {} candidate plans; estimating their memory and step-time "
                                             "bounds",
                                             p.candidates))
              << "\033[K" << std::flush;
    shown_ = true;
  }
  void finish() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

/// "90d", "90 days", "2000h", "2000 hours": the run's deadline. Throws InputError naming --deadline.
TimeNs parse_deadline(const std::string& text) {
  std::size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  unit.erase(0, unit.find_first_not_of(' '));
  const double scale = unit == "d" || unit == "days" || unit == "day"     ? 86400
                       : unit == "h" || unit == "hours" || unit == "hour" ? 3600
                                                                          : 0;
  if (end == 0 || scale == 0 || !(value > 0)) {
    throw InputError({"--deadline " + text, 0, 0}, "", "expected a positive number of days or hours: 90d, 2000h");
  }
  return TimeNs::seconds(value * scale);
}

/// --framework: a plan the framework cannot run is one its export refuses (interop/export: every setting
/// a target cannot express is an error there), so each ranked plan exports without error.
/// The model and the launch shape are copied: a cost search moves its inputs after setting this.
std::function<std::optional<std::string>(const plan::PlanSpec&, const plan::Plan&)> refusal_of(
    const std::string& framework, const Inputs& in, const std::string& model_file) {
  const interop::Framework target = *interop::framework_named(framework);  // one of them (CLI::IsMember)
  return [target, model = in.model, shape = interop::launch_shape(in.cluster), model_file](
             const plan::PlanSpec& spec, const plan::Plan& plan) -> std::optional<std::string> {
    try {
      // A schedule TorchTitan runs from a CSV names one beside its TOML, as `plan export -o` writes it.
      (void)interop::export_plan(target, {plan, spec, model, model_file, shape, "schedule.csv"});
      return std::nullopt;
    } catch (const InputError& e) {
      return e.message();
    }
  };
}

/// --optimize cost (planner/cost_search.h): the best (fastest) plan of each job size, its --tokens run,
/// and the size with the fewest GPU-hours whose run ends by --deadline.
void run_cost_search(const PlanArgs& args) {
  if (args.training.tokens.empty()) {
    throw InputError({"--optimize cost", 0, 0}, "", "cost is the GPU-hours of a run: give its length with --tokens");
  }
  const bool has_deadline = !args.deadline.empty();
  const TimeNs deadline = has_deadline ? parse_deadline(args.deadline) : TimeNs::ns(0);
  const Inputs whole = load_planner_inputs(args);
  const std::vector<int> job_sizes =
      planner::cost_job_sizes(static_cast<int>(whole.cluster.gpus().size()), whole.cluster.node_count, args.gpus.gpus);
  const auto search_of = [&args](int n) {
    PlanArgs at = args;
    at.gpus.gpus = n;
    at.gpus.gpus_per_node.reset();
    Inputs in = load_planner_inputs(at);
    planner::PlannerOptions options = planner_options(at);
    if (!args.framework.empty()) options.refuse = refusal_of(args.framework, in, args.files.model);
    return planner::JobSearch{std::move(in.cluster), std::move(in.model), std::move(options)};
  };
  const planner::CostSearchResult found = planner::run_cost_search(
      job_sizes, search_of, args.training, has_deadline ? std::optional<TimeNs>(deadline) : std::nullopt);
  const std::vector<planner::JobSizeResult>& sizes = found.sizes;
  const planner::JobSizeResult* chosen = found.chosen ? &sizes[*found.chosen] : nullptr;

  if (args.json) {
    nlohmann::ordered_json json;
    json["objective"] = "cost";
    json["deadline_s"] = has_deadline ? nlohmann::ordered_json(deadline.to_seconds()) : nlohmann::ordered_json();
    json["job_sizes"] = nlohmann::ordered_json::array();
    for (const planner::JobSizeResult& s : sizes) {
      nlohmann::ordered_json entry{{"gpus", s.gpus}};
      if (s.best) {
        entry["best"] = evaluated_json(*s.best, false, s.run, &whole);  // bands: the GPU kind and model of every size
      } else {
        entry["error"] = s.infeasible;
      }
      json["job_sizes"].push_back(std::move(entry));
    }
    json["chosen_gpus"] = chosen != nullptr ? nlohmann::ordered_json(chosen->gpus) : nlohmann::ordered_json();
    std::cout << json.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{}: the cheapest job size for {} tokens{}\n\n", whole.model.name, args.training.tokens,
                             has_deadline ? fmt::format(" within {:.1f} days", deadline.to_seconds() / 86400) : "");
    Table t;
    std::vector<std::string> header{"GPUs", "step time", "run (days)", "effective", "GPU-hours", "cost"};
    header.insert(header.end(), kPlanHeader.begin(), kPlanHeader.end());
    t.add_row(header);
    for (const planner::JobSizeResult& s : sizes) {
      std::vector<std::string> row{std::to_string(s.gpus) + (&s == chosen ? " *" : "")};
      if (!s.best) {
        row.push_back("no plan");
        t.add_row(row);
        continue;
      }
      row.insert(row.end(), {to_string(TimeNs::seconds(s.best->report.step_time_s)),
                             fmt::format("{:.1f}", s.run->wall_time.to_seconds() / 86400),
                             percent(s.run->effective_time_fraction), fmt::format("{:.0f}", s.run->gpu_hours),
                             s.run->cost ? fmt::format("{:.0f}", *s.run->cost) : "-"});
      const auto cells = plan_cells(s.best->plan);
      row.insert(row.end(), cells.begin(), cells.end());
      t.add_row(row);
    }
    std::cout << t.render();
    for (const planner::JobSizeResult& s : sizes) {
      if (!s.best) std::cout << fmt::format("{} GPUs: no plan: {}\n", s.gpus, s.infeasible);
    }
  }
  if (chosen == nullptr) {
    std::cerr << fmt::format("mpsim: error: --deadline {}: no job size finishes the run in time\n", args.deadline);
    throw ExitWith{kExitRunFailed};
  }
  if (!args.output.empty()) write_file_atomically(args.output, plan::write_plan_yaml(chosen->best->plan));
  if (!args.json) {
    std::cout << fmt::format("\n* {} GPUs: ", chosen->gpus) << training_text(*chosen->run);
    if (!args.output.empty()) std::cout << fmt::format("\nIts plan written to {} (run it with --gpus {})\n", args.output, chosen->gpus);
  }
}

/// --catalog (planner/catalog_search.h): every instance type at each count, its fastest plan's --tokens
/// run priced from the catalogue, the frontier of cost against time, and the cheapest run by --deadline
/// or the fastest within --budget.
void run_catalog_plan(const PlanArgs& args) {
  if (args.training.tokens.empty()) {
    throw InputError({"--catalog " + args.catalog, 0, 0}, "",
                     "a catalogue prices a run: give its length with --tokens");
  }
  std::vector<Override> overrides;
  for (const auto& s : args.sets) {
    Override o = parse_override(s, "--set");
    if (o.target == "topology") {
      throw InputError({o.origin, 0, 0}, "", "with --catalog the clusters are the catalogue's instances: set "
                                              "their topology in the node files or the catalogue's 'fabric'");
    }
    overrides.push_back(std::move(o));
  }
  const planner::Catalog catalog = planner::load_catalog_file(args.catalog, {default_file("topologies")});
  planner::CatalogLimits limits;
  if (!args.deadline.empty()) limits.deadline = parse_deadline(args.deadline);
  if (!args.budget.empty()) {
    const SourceLocation flag{"--budget " + args.budget, 0, 0};
    if (const auto why = planner::money_error(args.budget)) throw InputError(flag, "", *why);
    const planner::Money budget = planner::parse_money(args.budget);
    if (budget.currency != catalog.currency) {
      throw InputError(flag, "",
                       fmt::format("the catalogue's prices are in {}, so the budget must be too", catalog.currency));
    }
    if (!(budget.amount > 0)) throw InputError(flag, "", "a budget must be positive");
    limits.budget = budget.amount;
  }
  InputFiles files = args.files;
  if (files.model == PlanArgs{}.files.model) files.model = default_file(files.model);
  const auto search_of = [&](topology::Cluster cluster) {
    Inputs in = load_inputs_on_cluster(files, overrides, std::move(cluster));
    planner::PlannerOptions options = planner_options(args);
    if (!args.framework.empty()) options.refuse = refusal_of(args.framework, in, args.files.model);
    return planner::JobSearch{std::move(in.cluster), std::move(in.model), std::move(options)};
  };
  // A type whose GPU has no rate for --attention-kernel is skipped, and said so; none left is an error.
  const auto unusable = [&](const topology::Cluster& cluster) { return attention_kernel_error(args, cluster); };
  const planner::CatalogSearchResult found =
      planner::run_catalog_search(catalog, search_of, args.training, limits, args.mix_instance_types, unusable,
                                  args.instance_counts);
  if (found.skipped.size() == catalog.instances.size()) {
    std::vector<std::string> reasons;
    for (const planner::SkippedInstance& s : found.skipped) {
      reasons.push_back(fmt::format("{}: {}", catalog.instances[s.instance].name, s.reason));
    }
    // The flags that left no type: the attention kernel, the instance counts, or both.
    std::vector<std::string> flags;
    if (!args.attention_kernel.empty()) flags.push_back("--attention-kernel " + args.attention_kernel);
    if (!args.instance_counts.empty()) {
      flags.push_back(fmt::format("--instance-counts {}", fmt::join(args.instance_counts, ",")));
    }
    throw InputError({fmt::format("{}", fmt::join(flags, " ")), 0, 0}, "",
                     fmt::format("no instance type of {} can run it ({})", catalog.file, fmt::join(reasons, "; ")));
  }
  const std::vector<planner::CatalogOffer>& offers = found.offers;
  const planner::CatalogOffer* chosen = found.chosen ? &offers[*found.chosen] : nullptr;
  // "p5.48xlarge", or "p5.48xlarge + p4d.24xlarge" and counts "1 + 2" for two types.
  const auto name_of = [&](const planner::CatalogOffer& o) {
    const std::string& first = catalog.instances[o.instance].name;
    return o.second ? first + " + " + catalog.instances[*o.second].name : first;
  };
  const auto count_of = [](const planner::CatalogOffer& o) {
    return o.second ? fmt::format("{} + {}", o.count, o.second_count) : std::to_string(o.count);
  };
  const auto price_of = [&](const planner::CatalogOffer& o) {
    return o.second ? o.count * catalog.instances[o.instance].price_per_hour +
                          o.second_count * catalog.instances[*o.second].price_per_hour
                    : catalog.instances[o.instance].price_per_hour;
  };
  const auto on_frontier = [&](std::size_t i) {
    return std::find(found.frontier.begin(), found.frontier.end(), i) != found.frontier.end();
  };
  const std::string goal = limits.budget     ? fmt::format("the fastest run within {}", args.budget)
                           : limits.deadline ? fmt::format("the cheapest run within {:.1f} days",
                                                           limits.deadline->to_seconds() / 86400)
                                             : std::string("the cheapest run");

  if (args.json) {
    const auto point = [&](std::size_t i) {
      const planner::CatalogOffer& o = offers[i];
      return nlohmann::ordered_json{{"offer", i},
                                    {"instance", name_of(o)},
                                    {"count", o.count},
                                    {"gpus", o.job.gpus},
                                    {"step_time_s", o.job.best->report.step_time_s},
                                    {"wall_time_s", o.job.run->wall_time.to_seconds()},
                                    {"cost", *o.job.run->cost}};
    };
    nlohmann::ordered_json json;
    json["objective"] = limits.budget ? "time" : "cost";
    json["catalog"] = catalog.file;
    json["currency"] = catalog.currency;
    json["deadline_s"] = limits.deadline ? nlohmann::ordered_json(limits.deadline->to_seconds()) : nlohmann::ordered_json();
    json["budget"] = limits.budget ? nlohmann::ordered_json(*limits.budget) : nlohmann::ordered_json();
    json["skipped"] = nlohmann::ordered_json::array();
    for (const planner::SkippedInstance& s : found.skipped) {
      json["skipped"].push_back({{"type", catalog.instances[s.instance].name}, {"reason", s.reason}});
    }
    json["offers"] = nlohmann::ordered_json::array();
    for (const planner::CatalogOffer& o : offers) {
      nlohmann::ordered_json entry{{"instance", name_of(o)},
                                   {"count", o.count},
                                   {"gpus", o.job.gpus},
                                   {"price_per_hour", price_of(o)}};
      if (o.second) {
        entry["second"] = {{"instance", catalog.instances[*o.second].name}, {"count", o.second_count}};
      }
      if (o.job.best) {
        entry["best"] = evaluated_json(*o.job.best, false, o.job.run);
      } else {
        entry["error"] = o.job.infeasible;
      }
      json["offers"].push_back(std::move(entry));
    }
    json["frontier"] = nlohmann::ordered_json::array();
    for (const std::size_t i : found.frontier) json["frontier"].push_back(point(i));
    json["chosen"] = chosen != nullptr ? point(*found.chosen) : nlohmann::ordered_json();
    std::cout << json.dump(2) << "\n";
  } else {
    std::vector<std::string> defaults;
    for (const std::string& d : args.defaults_used) {
      if (d.rfind("--topology", 0) != 0) defaults.push_back(d);
    }
    if (!defaults.empty()) std::cout << fmt::format("Not given, so the defaults: {}\n", fmt::join(defaults, ", "));
    std::cout << fmt::format("{}: {} tokens on the instance types of {} (prices in {}): {}\n\n", files.model,
                             args.training.tokens, catalog.file, catalog.currency, goal);
    for (const planner::SkippedInstance& s : found.skipped) {
      std::cout << fmt::format("Skipped {}: {}\n", catalog.instances[s.instance].name, s.reason);
    }
    if (!found.skipped.empty()) std::cout << "\n";
    std::cout << "Every instance type and count, its fastest plan (* the choice, f: on the frontier):\n";
    Table t;
    std::vector<std::string> header{"instance", "count", "GPUs", "step time", "run (days)", "effective", "cost"};
    header.insert(header.end(), kPlanHeader.begin(), kPlanHeader.end());
    t.add_row(header);
    for (std::size_t i = 0; i < offers.size(); ++i) {
      const planner::CatalogOffer& o = offers[i];
      const std::string mark = &o == chosen ? " *" : on_frontier(i) ? " f" : "";
      std::vector<std::string> row{name_of(o) + mark, count_of(o), std::to_string(o.job.gpus)};
      if (!o.job.best) {
        row.push_back("no plan");
        t.add_row(row);
        continue;
      }
      row.insert(row.end(), {to_string(TimeNs::seconds(o.job.best->report.step_time_s)),
                             fmt::format("{:.2f}", o.job.run->wall_time.to_seconds() / 86400),
                             percent(o.job.run->effective_time_fraction), planner::money_text(*o.job.run->cost, catalog.currency)});
      const auto cells = plan_cells(o.job.best->plan);
      row.insert(row.end(), cells.begin(), cells.end());
      t.add_row(row);
    }
    std::cout << t.render();
    for (const planner::CatalogOffer& o : offers) {
      if (!o.job.best) std::cout << fmt::format("{} x {}: no plan: {}\n", count_of(o), name_of(o), o.job.infeasible);
    }
    std::cout << "\nFrontier of cost against time to train (no other run is both cheaper and faster), cheapest first:\n";
    Table f;
    f.add_row({"cost", "run (days)", "instance", "count", "GPUs", "step time", "plan"});
    for (const std::size_t i : found.frontier) {
      const planner::CatalogOffer& o = offers[i];
      f.add_row({planner::money_text(*o.job.run->cost, catalog.currency),
                 fmt::format("{:.2f}", o.job.run->wall_time.to_seconds() / 86400), name_of(o) + (&o == chosen ? " *" : ""),
                 count_of(o), std::to_string(o.job.gpus),
                 to_string(TimeNs::seconds(o.job.best->report.step_time_s)), plan_summary(o.job.best->plan)});
    }
    std::cout << f.render();
  }
  if (chosen == nullptr) {
    std::cerr << (limits.budget     ? fmt::format("mpsim: error: --budget {}: no instance type and count trains that "
                                                  "cheaply\n", args.budget)
                  : limits.deadline ? fmt::format("mpsim: error: --deadline {}: no instance type and count finishes "
                                                  "the run in time\n", args.deadline)
                                    : std::string("mpsim: error: no instance type and count has a plan that fits\n"));
    throw ExitWith{kExitRunFailed};
  }
  const planner::CatalogInstance& instance = catalog.instances[chosen->instance];
  if (!args.output.empty()) write_file_atomically(args.output, plan::write_plan_yaml(chosen->job.best->plan));
  if (!args.json) {
    std::cout << fmt::format("\n* {} x {} ({} GPUs), {}: ", count_of(*chosen), name_of(*chosen), chosen->job.gpus,
                             planner::money_text(*chosen->job.run->cost, catalog.currency))
              << training_text(*chosen->job.run);
    if (!args.output.empty() && chosen->second) {
      const planner::CatalogInstance& second = catalog.instances[*chosen->second];
      std::cout << fmt::format("\nIts plan written to {} (its cluster: node_groups of {} x {} then {} x {}, "
                               "docs/mixed-clusters.md)\n",
                               args.output, chosen->count, instance.node_file, chosen->second_count, second.node_file);
    } else if (!args.output.empty()) {
      // With the catalogue's own fabric the node file alone does not give the cluster: say what does.
      std::cout << (instance.own_fabric
                        ? fmt::format("\nIts plan written to {} (its cluster: {} nodes of {} joined by the catalogue's "
                                      "fabric: a topology file of node_from, nodes and that fabric runs it)\n",
                                      args.output, chosen->count, instance.node_file)
                        : fmt::format("\nIts plan written to {} (run it with --topology {} --set topology.nodes={})\n",
                                      args.output, instance.node_file, chosen->count));
    }
  }
}

/// A part of the cluster (a kind's nodes alone, or some of its nodes) searched as the whole was: the same
/// model, global batch and options, the framework's refusals on the part's own launch shape. A degree
/// --tensor (...) fixes that the part cannot have is its reason for no plan (`error`). Under mpirun every
/// process runs this, each its share of the search, and rank 0 gets the whole result.
planner::PlannerResult search_part(const PlanArgs& args, const Inputs& in, const planner::PlannerOptions& whole_options,
                                   const topology::Cluster& part, std::optional<executor::MpiSession>& mpi,
                                   Progress& progress, std::string& error) {
  const Inputs alone{part, in.model, std::nullopt, in.profile};
  try {
    check_fixed_degrees(args, alone);
  } catch (const InputError& e) {
    error = fmt::format("{}: {}", e.where().file, e.message());
    return {};
  }
  planner::PlannerOptions options = whole_options;
  if (!args.framework.empty()) options.refuse = refusal_of(args.framework, alone, args.files.model);
  planner::PlannerResult result = planner::run_planner(part, in.model, options);
  progress.finish();
  if (mpi && mpi->size() > 1) {
    const double searched_s = result.stats.search_time_s;
    const auto started = std::chrono::steady_clock::now();
    result = gather_shards(result, options, part, in.model, mpi->rank(), mpi->size());
    result.stats.search_time_s = searched_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  error = result.infeasible;
  return result;
}

/// On a cluster of several GPU kinds, each kind's nodes alone searched as the mix was (planner/kind_alone.h).
std::vector<KindAloneSearch> search_kinds_alone(const PlanArgs& args, const Inputs& in,
                                                const planner::PlannerOptions& mix_options,
                                                const planner::Evaluated* mix_best,
                                                std::optional<executor::MpiSession>& mpi, Progress& progress) {
  std::vector<KindAloneSearch> out;
  for (planner::KindAlone& kind : planner::kinds_alone(in.cluster)) {
    KindAloneSearch k{std::move(kind), {}, {}, std::nullopt};
    k.result = search_part(args, in, mix_options, k.kind.cluster, mpi, progress, k.error);
    if (const planner::Evaluated* best = k.best(); best != nullptr && mix_best != nullptr) {
      k.against_mix = planner::against_mix(in.cluster, *mix_best, k.kind, *best, in.model);
    }
    out.push_back(std::move(k));
  }
  return out;
}

/// The fastest kind alone's nodes with some of the other kinds' nodes (planner/cluster_parts.h), each
/// searched as the mix was; none when no kind alone has a plan.
std::vector<ClusterPartSearch> search_cluster_parts(const PlanArgs& args, const Inputs& in,
                                                    const planner::PlannerOptions& mix_options,
                                                    const std::vector<KindAloneSearch>& kinds,
                                                    std::optional<executor::MpiSession>& mpi, Progress& progress) {
  const KindAloneSearch* fastest = nullptr;
  for (const KindAloneSearch& k : kinds) {
    if (k.best() != nullptr && (fastest == nullptr || k.best()->report.step_time_s < fastest->best()->report.step_time_s)) {
      fastest = &k;
    }
  }
  std::vector<ClusterPartSearch> out;
  if (fastest == nullptr) return out;
  for (planner::ClusterPart& part : planner::cluster_parts(in.cluster, fastest->kind.kind, planner::kMostClusterParts)) {
    ClusterPartSearch p{std::move(part), {}, {}};
    p.result = search_part(args, in, mix_options, p.part.cluster, mpi, progress, p.error);
    out.push_back(std::move(p));
  }
  return out;
}

void run_planner_command(const PlanArgs& args) {
  // Under mpirun the processes divide the search; rank 0 gathers it and prints.
  std::optional<executor::MpiSession> mpi;
  if (executor::started_by_mpi_launcher()) mpi.emplace(nullptr, nullptr);
  const bool divided = mpi && mpi->size() > 1;
  const variability::SamplingRequest sampling = sampling_request(args.sampling);
  if (sampling.active() && args.optimize == "cost") {
    throw InputError({"--samples", 0, 0}, "",
                     "sampled steps are for the ranked plans of --optimize speed or memory, not a cost search");
  }
  if (divided && args.optimize == "cost") {
    throw InputError({"--optimize", 0, 0}, "", "--optimize cost runs in one process: leave out mpirun");
  }
  if (!args.catalog.empty()) {
    if (divided) throw InputError({"--catalog", 0, 0}, "", "a catalogue search runs in one process: leave out mpirun");
    run_catalog_plan(args);
    return;
  }
  if (args.optimize == "cost") {
    run_cost_search(args);
    return;
  }
  if (!args.deadline.empty()) throw InputError({"--deadline", 0, 0}, "", "a deadline applies to --optimize cost or --catalog");
  const Inputs in = load_planner_inputs(args);
  check_fixed_degrees(args, in);
  planner::PlannerOptions options = planner_options(args);
  if (divided) {
    if (args.verify_top > 0) throw InputError({"--verify-top", 0, 0}, "", "run the verification outside mpirun: it starts its own");
    options.shard = mpi->rank();
    options.shards = mpi->size();
  }
  if (!args.framework.empty()) options.refuse = refusal_of(args.framework, in, args.files.model);
  Progress progress(!args.json && !divided && isatty(STDERR_FILENO) != 0);
  options.on_progress = [&progress](const planner::SearchProgress& p) { progress.update(p); };
  planner::PlannerResult result = planner::run_planner(in.cluster, in.model, options);
  progress.finish();
  if (divided) {
    const auto started = std::chrono::steady_clock::now();
    const double searched_s = result.stats.search_time_s;
    result = gather_shards(result, options, in.cluster, in.model, mpi->rank(), mpi->size());
    result.stats.search_time_s = searched_s + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  // On several GPU kinds, each kind alone (for step time: the comparison is of speed), against the mix's
  // fastest plan (before --robust or --verify-top order the ranking otherwise).
  std::vector<KindAloneSearch> kinds_alone;
  std::vector<ClusterPartSearch> cluster_parts;
  const std::optional<double> mix_step_s =
      result.ranked.empty() ? std::nullopt : std::optional(result.ranked.front().report.step_time_s);
  if (!args.no_single_kind && options.space.objective == plan::Objective::Speed) {
    kinds_alone = search_kinds_alone(args, in, options, result.ranked.empty() ? nullptr : &result.ranked.front(), mpi,
                                     progress);
    cluster_parts = search_cluster_parts(args, in, options, kinds_alone, mpi, progress);
  }
  if (divided && mpi->rank() != 0) return;
  // The best plan only the memory margin kept out, when the objective would have ranked it #1.
  const planner::Evaluated* left_out_by_margin =
      result.within_margin && (result.ranked.empty() || planner::ranks_before(options.space.objective, *result.within_margin,
                                                                               result.ranked.front()))
          ? &*result.within_margin
          : nullptr;
  // Of the plans the predictions cannot order (within the ranking tolerance of the fastest), the fastest
  // one whose peak survives the worst measured under-prediction goes first (planner/headroom_choice.h);
  // --robust orders by its what-ifs.
  std::optional<planner::HeadroomChoice> headroom_choice;
  if (options.space.objective == plan::Objective::Speed && !args.robust && !result.ranked.empty()) {
    headroom_choice = planner::choose_for_headroom(result.ranked, result.pareto, rank_tolerance(args, in, result.ranked.front()));
    if (headroom_choice) planner::put_first(result.ranked, *headroom_choice);
  }
  // Each ranked plan's step under the two what-ifs (planner/sensitivity.h); --robust ranks by the worse.
  std::map<std::size_t, planner::Sensitivity> sensitivities;
  {
    std::vector<planner::Sensitivity> found(result.ranked.size());
    planner::parallel_for(result.ranked.size(), options.threads, [&](std::size_t i) {
      found[i] = planner::sensitivity(in.cluster, in.model, result.ranked[i].plan, options.engine);
    });
    for (std::size_t i = 0; i < found.size(); ++i) sensitivities[result.ranked[i].id] = found[i];
  }
  // --samples: each ranked plan (not the whole search) over the same sampled clusters; with it, --robust
  // ranks by p95, the straggler what-if made a distribution (docs/stragglers.md).
  std::map<std::size_t, variability::StepDistributionSummary> sampled;
  if (sampling.active()) {
    std::vector<plan::Plan> plans;
    for (const auto& e : result.ranked) plans.push_back(e.plan);
    const auto steps = planner::sample_steps(in.cluster, in.model, plans, options.engine, sampling, options.threads);
    for (std::size_t i = 0; i < steps.size(); ++i) sampled[result.ranked[i].id] = steps[i].summary;
  }
  if (args.robust) {
    std::stable_sort(result.ranked.begin(), result.ranked.end(), [&](const auto& a, const auto& b) {
      if (!sampled.empty()) return sampled.at(a.id).p95_s < sampled.at(b.id).p95_s;
      return sensitivities.at(a.id).worse() < sensitivities.at(b.id).worse();
    });
  }
  const planner::SearchStats& stats = result.stats;
  const int gpus = static_cast<int>(in.cluster.gpus().size());
  const std::string cluster_name = in.cluster.name.empty() ? "the cluster" : in.cluster.name;

  const auto estimate = [&](const planner::Evaluated& e) {
    training::TrainingStep step = engine::training_step(in.cluster, in.model, e.plan, e.report);
    // Sampled, a long run's steps average out: it takes the mean step.
    if (const auto s = sampled.find(e.id); s != sampled.end()) step.step_time = TimeNs::seconds(s->second.mean_s);
    return training::estimate_request(args.training, step);
  };
  // A sampled plan's distribution, and p95 / p50: how much its step moves with stragglers.
  const auto add_sampled = [&](nlohmann::ordered_json& entry, const planner::Evaluated& e) {
    const auto s = sampled.find(e.id);
    if (s == sampled.end()) return;
    add_sampled_step_fields(entry, sampling, s->second);
    entry["step_time_p95_over_p50"] = s->second.p95_s / s->second.p50_s;
  };
  nlohmann::ordered_json json;
  if (args.json) {
    json["best"] = result.ranked.empty() ? nlohmann::ordered_json()
                                         : evaluated_json(result.ranked.front(), true, estimate(result.ranked.front()), &in);
    if (!result.ranked.empty()) add_sampled(json["best"], result.ranked.front());
    json["candidates"] = nlohmann::ordered_json::array();
    for (const auto& e : result.ranked) {
      nlohmann::ordered_json entry = evaluated_json(e, false, estimate(e), &in);
      const planner::Sensitivity& s = sensitivities.at(e.id);
      entry["sensitivity"] = {{"half_network_step_s", s.half_network_step_s}, {"slow_gpu_step_s", s.slow_gpu_step_s}};
      add_sampled(entry, e);
      json["candidates"].push_back(std::move(entry));
    }
    json["ranked_by"] = args.robust ? (sampled.empty() ? "worse_what_if" : "p95")
                        : headroom_choice ? "step_time_then_headroom"
                                          : "step_time";
    // Why #1 is not the fastest plan found: the tolerance, how many plans were within it, and that plan.
    json["headroom_choice"] = headroom_choice
                                  ? nlohmann::ordered_json{{"tolerance", headroom_choice->tolerance},
                                                           {"plans_within", headroom_choice->within},
                                                           {"fastest", evaluated_json(headroom_choice->fastest, false,
                                                                                      estimate(headroom_choice->fastest), &in)}}
                                  : nlohmann::ordered_json();
    json["pareto"] = nlohmann::ordered_json::array();
    for (const auto& e : result.pareto) json["pareto"].push_back(evaluated_json(e, false, estimate(e), &in));
    json["within_margin"] = left_out_by_margin
                                ? evaluated_json(*left_out_by_margin, false, estimate(*left_out_by_margin), &in)
                                : nlohmann::ordered_json();
    json["evaluated"] = stats.evaluated;
    json["pruned"] = stats.pruned();
    json["search"] = {{"candidates", stats.candidates},
                      {"pruned_memory", stats.pruned_memory},
                      {"pruned_bound", stats.pruned_bound},
                      {"pruned_invalid", stats.pruned_invalid},
                      {"pruned_framework", stats.pruned_framework},
                      {"objective", std::string(plan::to_string(options.space.objective))},
                      {"global_batch", args.global_batch},
                      {"gpus", gpus},
                      {"memory_reserve_bytes", options.memory_reserve.count()},
                      {"memory_margin", options.memory_margin},
                      {"rank_tolerance", !result.ranked.empty() && options.space.objective == plan::Objective::Speed && !args.robust
                                             ? nlohmann::ordered_json(headroom_choice ? headroom_choice->tolerance
                                                                                      : rank_tolerance(args, in, result.ranked.front()))
                                             : nlohmann::ordered_json()},
                      {"usable_memory_bytes", result.usable.count()},
                      {"within_margin", stats.within_margin},
                      {"pareto", args.pareto},
                      {"pareto_tolerance", options.exact_pareto ? nlohmann::ordered_json(options.pareto_tolerance) : nlohmann::ordered_json()},
                      {"defaults_used", args.defaults_used}};
    json["search_time_s"] = stats.search_time_s;
    if (!kinds_alone.empty()) {
      json["single_kind_alternatives"] = kinds_alone_json(kinds_alone);
      json["fastest"] = fastest_json(kinds_alone, cluster_parts, mix_step_s);
      json["cluster_part_alternatives"] = cluster_parts_json(cluster_parts, mix_step_s);
    }
  }
  if (result.ranked.empty()) {
    if (args.json) {
      json["error"] = result.infeasible;
      std::cout << json.dump(2) << "\n";
    } else {
      std::cout << kinds_alone_text(kinds_alone, false) << cluster_parts_text(cluster_parts, mix_step_s);
    }
    std::cerr << fmt::format("mpsim: error: no feasible plan: {}\n", result.infeasible);
    throw ExitWith{kExitRunFailed};
  }

  std::vector<VerifiedPlan> verified;
  if (args.verify_top > 0) {
    if (args.gpus.gpus) {
      throw InputError({"--verify-top", 0, 0}, "",
                       "the verified plans run on the topology's GPUs: leave out --gpus (set the topology's size "
                       "with --set instead)");
    }
    VerifyOptions verify{args.verify_top, args.verify_backend, args.verify_ranks, 3, 1, args.files, args.sets};
    std::vector<planner::Evaluated> distinct;  // a plan's twins under other placements would run the same step
    for (const auto& group : planner::merge_equivalent(result.ranked)) distinct.push_back(group.plan);
    verified = verify_top(distinct, verify);
  }
  // With --verify-top, the best plan is the fastest measured one.
  const bool measured_best = !verified.empty() && verified.front().measured_step_s.has_value();
  const planner::Evaluated& best = measured_best ? verified.front().evaluated : result.ranked.front();
  if (!args.output.empty()) write_file_atomically(args.output, plan::write_plan_yaml(best.plan));
  if (!args.trace.empty()) {
    auto prediction =
        engine::simulate_traced(in.cluster, in.model, best.plan, options.engine, link_lanes_named(args.trace_links));
    write_trace_file(args.trace, prediction.timeline, std::move(prediction.report),
                     [](const trace::Report& r) { return trace::report_json(r); });
  }
  // --baseline: the user's own plan on the same cluster and model, against #1.
  std::optional<planner::Evaluated> baseline;
  std::optional<planner::Comparison> against_baseline;
  std::optional<planner::Sensitivity> baseline_sensitivity;
  if (!args.baseline.empty()) {
    planner::Evaluated e;
    e.plan = plan::resolve_plan(plan::load_plan_file(args.baseline), in.cluster, in.model);
    e.report = engine::simulate(in.cluster, in.model, e.plan, options.engine).report;
    baseline = std::move(e);
    against_baseline = planner::compare(in.cluster, in.model, best, *baseline);
    baseline_sensitivity = planner::sensitivity(in.cluster, in.model, baseline->plan, options.engine);
  }
  std::optional<planner::Comparison> comparison;
  std::optional<planner::TimeBreakdown> alone;
  if (args.explain) {
    // The runner-up is the best plan that is not the winner under another placement.
    const auto runner_up = std::find_if(result.ranked.begin(), result.ranked.end(), [&](const planner::Evaluated& e) {
      return e.plan != best.plan && !planner::equivalent(best, e);
    });
    if (runner_up != result.ranked.end()) {
      comparison = planner::compare(in.cluster, in.model, best, *runner_up);
    } else {
      alone = planner::breakdown(in.cluster, in.model, best);
    }
  }

  if (args.json) {
    if (baseline) {
      nlohmann::ordered_json entry = evaluated_json(*baseline, false, estimate(*baseline), &in);
      entry["sensitivity"] = {{"half_network_step_s", baseline_sensitivity->half_network_step_s},
                              {"slow_gpu_step_s", baseline_sensitivity->slow_gpu_step_s}};
      entry["differences"] = against_baseline->differences;
      entry["main_reason"] = against_baseline->main_reason;
      json["baseline"] = std::move(entry);
    }
    if (comparison) {
      json["explain"] = {{"best", breakdown_json(comparison->winner)},
                         {"runner_up", breakdown_json(comparison->other)},
                         {"differences", comparison->differences},
                         {"main_reason", comparison->main_reason}};
    } else if (alone) {
      json["explain"] = {{"best", breakdown_json(*alone)}};
    }
    if (args.verify_top > 0) {
      json["verified"] = nlohmann::ordered_json::array();
      for (const VerifiedPlan& v : verified) {
        nlohmann::ordered_json entry = evaluated_json(v.evaluated, false, std::nullopt, &in);
        entry["predicted_rank"] = v.predicted_rank;
        entry["predicted_step_time_s"] = v.evaluated.report.step_time_s;
        entry["measured_step_time_s"] = v.measured_step_s ? nlohmann::ordered_json(*v.measured_step_s) : nlohmann::ordered_json();
        if (!v.measured_step_s) entry["failure"] = v.failure;
        json["verified"].push_back(entry);
      }
      json["verify_backend"] = args.verify_backend;
    }
    std::cout << json.dump(2) << "\n";
    return;
  }

  // A plan on inputs nobody gave must say so: the README's job is a default, not the user's cluster.
  if (!args.defaults_used.empty()) {
    std::cout << fmt::format("Not given, so the defaults: {}\n", fmt::join(args.defaults_used, ", "));
  }
  std::cout << fmt::format("{} on {} ({} GPUs), global batch {}, optimizing for {}\n", in.model.name, cluster_name, gpus,
                           args.global_batch, plan::to_string(options.space.objective));
  std::cout << fmt::format(
      "{} candidate plans; {} simulated in {:.1f} s; pruned {} over memory{}, {} by the step-time bound{}\n",
      stats.candidates, stats.evaluated, stats.search_time_s, stats.pruned_memory,
      stats.within_margin > 0 ? fmt::format(" ({} of them only by the margin)", stats.within_margin) : "",
      stats.pruned_bound,
      fmt::format("{}{}", stats.pruned_invalid > 0 ? fmt::format(", {} invalid", stats.pruned_invalid) : "",
                  stats.pruned_framework > 0
                      ? fmt::format(", {} that {} cannot run", stats.pruned_framework, args.framework)
                      : ""));
  std::cout << fmt::format("Memory a plan may use: {} per GPU\n\n",
                           planner::usable_memory_text(result.capacity, result.usable, options));
  if (!sampled.empty()) {
    std::cout << fmt::format("p95, p95/p50: of each ranked plan's step over the same {} sampled steps ({}, seed {})\n",
                             sampling.samples, spread_text(sampling.spread), sampling.seed);
  }
  if (args.robust) {
    std::cout << (sampled.empty() ? "Ranked by the worse of the two what-ifs (net/2, gpu+15%), among the plans found:\n"
                                  : "Ranked by p95 of the sampled steps, among the plans found:\n");
  }
  std::cout << ranked_table(result.ranked, sensitivities, sampled);
  if (headroom_choice) std::cout << headroom_note(*headroom_choice, args);
  if (left_out_by_margin != nullptr) {
    std::cout << margin_warning(*left_out_by_margin, result.ranked.front(), result.capacity, options);
  }
  std::cout << kinds_alone_text(kinds_alone, true) << cluster_parts_text(cluster_parts, mix_step_s);
  std::cout << "\nSpeed/memory Pareto front" << pareto_scope(options) << ":\n" << pareto_table(result.pareto);
  if (!verified.empty()) {
    std::cout << fmt::format("\nVerified: the {} best plans run with the {} backend on {} ranks (median of {} steps after "
                             "{} warm-up), fastest measured first:\n",
                             verified.size(), args.verify_backend, best.plan.gpus(), 3, 1)
              << verified_table(verified);
  }
  if (baseline) {
    const trace::Report& r = baseline->report;
    const double gap = r.step_time_s / best.report.step_time_s - 1.0;
    const auto change = [&](double step_s) { return fmt::format("{:+.1f}%", 100.0 * (step_s / r.step_time_s - 1.0)); };
    std::cout << fmt::format("\nYour plan ({}): step {} ({:+.1f}% against #1), peak memory {}, net/2 {}, gpu+15% {}\n",
                             args.baseline, to_string(TimeNs::seconds(r.step_time_s)), 100.0 * gap,
                             to_string(Bytes::bytes(r.peak_memory_bytes)), change(baseline_sensitivity->half_network_step_s),
                             change(baseline_sensitivity->slow_gpu_step_s));
    std::cout << fmt::format("  it differs from #1 in {}; {} on {}\n",
                             against_baseline->differences.empty() ? "nothing"
                                                                   : fmt::format("{}", fmt::join(against_baseline->differences, ", ")),
                             gap >= 0 ? "it loses" : "it wins", against_baseline->main_reason);
  }
  if (const auto best_run = estimate(best)) std::cout << "\n#1: " << training_text(*best_run);
  if (comparison || alone) {
    const planner::TimeBreakdown& b = comparison ? comparison->winner : *alone;
    std::cout << fmt::format("\nWhy #1: step {} on its busiest stage ({}): {}\n", seconds(b.step_s), b.stage,
                             breakdown_line(b));
    if (comparison) {
      const planner::TimeBreakdown& o = comparison->other;
      std::cout << fmt::format("  #2 takes {} ({}{}): {}\n", seconds(o.step_s), o.step_s >= b.step_s ? "+" : "-",
                               seconds(std::abs(o.step_s - b.step_s)), breakdown_line(o));
      std::cout << fmt::format("  #2 differs in {}; it loses on {}\n",
                               comparison->differences.empty() ? "nothing" : fmt::format("{}", fmt::join(comparison->differences, ", ")),
                               comparison->main_reason);
    }
  }
  if (!args.output.empty()) std::cout << fmt::format("\nBest plan written to {}\n", args.output);
  if (!args.trace.empty()) std::cout << fmt::format("Its timeline written to {}\n", args.trace);
}

}  // namespace

void add_plan_commands(CLI::App& app) {
  CLI::App* plan_cmd = app.add_subcommand(
      "plan", "Find the best plan for a model on a cluster (or check a plan file: plan check)");
  plan_cmd->require_subcommand(0, 1);

  auto check_args = std::make_shared<CheckArgs>();
  auto* check = plan_cmd->add_subcommand("check", "Validate a plan against a cluster and a model");
  check->add_option("file", check_args->plan_file, "Plan YAML file")->required();
  check->add_option("--topology", check_args->topology_file, "Topology YAML file")->required();
  check->add_option("--model", check_args->model_file, "Model YAML file")->required();
  check->add_flag("--json", check_args->json, "Print the completed plan as JSON");
  check->callback([check_args] { run_check(*check_args); });
  add_plan_launch_commands(*plan_cmd);

  auto args = std::make_shared<PlanArgs>();
  plan_cmd->add_option("--topology", args->files.topology, "Topology YAML (default topologies/4x-p4d.yaml)");
  plan_cmd->add_option("--model", args->files.model, "Model YAML (default configs/models/gpt3-13b.yaml)");
  plan_cmd->add_option("--global-batch", args->global_batch, "Samples per step (default 256)")
      ->check(CLI::PositiveNumber);
  add_gpu_selection_options(*plan_cmd, args->gpus);
  add_profile_option(*plan_cmd, args->files.profile);
  plan_cmd->add_option("--optimize", args->optimize, "speed (step time), memory (peak memory, then step time) or cost (GPU-hours of the --tokens run over job sizes)")
      ->check(CLI::IsMember({"speed", "memory", "cost"}));
  plan_cmd->add_option("--deadline", args->deadline,
                       "With --optimize cost: the run (--tokens) must end within this: 90d, 2000h");
  plan_cmd->add_option("--schedules", args->schedules, "Only these schedules, comma-separated (1f1b,zb-h1,...)");
  plan_cmd->add_option("--recompute", args->recompute, "Only these recomputation policies: none,selective,full,op (op only when named)");
  plan_cmd->add_option("--precisions", args->precisions,
                       "Also search these GEMM precisions, comma-separated (bf16,fp8,mxfp8,fp8-blockwise; those the "
                       "GPU has no peak for are skipped; default: the model's own)");
  plan_cmd->add_option("--attention-kernel", args->attention_kernel,
                       "The FlashAttention generation the run's software ships, in every plan: fa2, fa3 or fa4 "
                       "(the plan field attention_kernel; default: the GPU kind's attention_efficiency)")
      ->check(CLI::IsMember({"fa2", "fa3", "fa4"}));
  plan_cmd->add_option("--moe-dispatcher", args->moe_dispatcher,
                       "How MoE layers exchange tokens, in every plan: alltoall (NCCL all-to-alls), deepep or hybridep "
                       "(Megatron's flex dispatcher: a token crosses to each node once; the plan fields "
                       "moe_token_dispatcher_type and moe_flex_dispatcher_backend)")
      ->check(CLI::IsMember(plan::names_of(plan::kMoeDispatcherNames)));
  plan_cmd->add_flag("--precision-aware-optimizer", args->precision_aware_optimizer,
                     "Megatron-Core's precision-aware optimizer in every plan (the plan field "
                     "precision_aware_optimizer: Transformer Engine's FusedAdam keeps the optimizer state)");
  plan_cmd->add_option("--exp-avg-dtype", args->exp_avg_dtype,
                       "Adam's first moment as stored, in every plan: fp32 (default), bf16, fp16 or fp8 (others than "
                       "fp32 with --precision-aware-optimizer)")
      ->check(CLI::IsMember(plan::names_of(plan::kStateDtypeNames)));
  plan_cmd->add_option("--exp-avg-sq-dtype", args->exp_avg_sq_dtype,
                       "Adam's second moment as stored, as --exp-avg-dtype")
      ->check(CLI::IsMember(plan::names_of(plan::kStateDtypeNames)));
  plan_cmd->add_option("--zero", args->zero, "Only these ZeRO stages, e.g. 0,1 (default 0,1,2,3)");
  plan_cmd->add_option("--framework", args->framework,
                       "Search only plans this framework runs: each one its launch config exports without error "
                       "(plan export --to)")
      ->check(CLI::IsMember(plan::names_of(interop::kFrameworkNames)));
  for (const FixedAxisFlag& f : kFixedAxisFlags) plan_cmd->add_option(f.flag, args.get()->*f.list, f.help);
  plan_cmd->add_option("--max-tensor", args->max_tensor, "Largest tensor-parallel degree")->check(CLI::PositiveNumber);
  plan_cmd->add_option("--max-context", args->max_context, "Largest context-parallel degree")->check(CLI::PositiveNumber);
  plan_cmd->add_option("--max-expert", args->max_expert, "Largest expert-parallel degree (MoE models)")
      ->check(CLI::PositiveNumber);
  plan_cmd->add_option("--max-micro-batch", args->max_micro_batch, "Largest micro batch")->check(CLI::PositiveNumber);
  plan_cmd->add_option("--top", args->top, "How many plans to rank (default 10)")->check(CLI::PositiveNumber);
  plan_cmd->add_option("--pareto", args->pareto,
                       fmt::format("near (default): simulate what the speed/memory front needs to within {:g}% (every "
                                   "plan that fits has one on it that needs no more memory and is at most {:g}% "
                                   "slower); exact: the whole front; simulated: the front of the plans simulated for "
                                   "the ranking (fastest)",
                                   100 * planner::kNearParetoTolerance, 100 * planner::kNearParetoTolerance))
      ->check(CLI::IsMember({"near", "exact", "simulated"}));
  plan_cmd->add_option("--memory-reserve", args->memory_reserve, "Memory kept free on every GPU, e.g. \"2 GiB\"");
  plan_cmd->add_option("--memory-margin", args->memory_margin_percent,
                       fmt::format("Percent of each GPU's memory (after --memory-reserve) also kept free, since measured "
                                   "peaks run above predicted ones: a plan is ranked when its peak is at most (capacity "
                                   "- reserve) x (1 - PCT/100); 0 turns it off (default {:g}, from the worst "
                                   "under-predicted allocated peak of docs/validation.md, \"Memory\")",
                                   100 * planner::kDefaultMemoryMargin))
      ->type_name("PCT")
      ->check(CLI::Range(0.0, 99.0));
  plan_cmd->add_option("--rank-tolerance", args->rank_tolerance_percent,
                       "Percent of the fastest plan's step within which plans count as equals; #1 is then the fastest of "
                       "them whose peak would fit even as under-predicted as the worst measured peak (else the one with "
                       "the most memory free); 0 ranks by step time alone (default: "
                       "the median error of predicted ratios between published runs of one model on one cluster, by "
                       "group: docs/planner.md, \"Plans the predictions cannot order\")")
      ->type_name("PCT")
      ->check(CLI::Range(0.0, 50.0));
  plan_cmd->add_option("--set", args->sets, "Override a topology or model field: topology.node.nics.bandwidth=\"100 Gb/s\", topology.nodes=16");
  plan_cmd->add_option("-o,--output", args->output, "Write the best plan as a plan YAML");
  plan_cmd->add_option("--trace", args->trace, "Write the best plan's Chrome trace (gzip when it ends in .gz)");
  add_trace_links_option(*plan_cmd, args->trace_links);
  plan_cmd->add_flag("--json", args->json, "Print the result as JSON");
  plan_cmd->add_option("--baseline", args->baseline,
                       "A plan file (the plan run today): simulated on the same cluster and model and shown beside "
                       "the ranking, with what differs from #1 and why it loses");
  plan_cmd->add_flag("--robust", args->robust,
                     "Rank the plans found by their step with every network link at half bandwidth or one GPU "
                     "15% slow, whichever is worse; with --samples, by their p95 step");
  add_sampling_options(*plan_cmd, args->sampling);
  plan_cmd->add_flag("--no-single-kind", args->no_single_kind,
                     "On a cluster of several GPU kinds, do not also search each kind's nodes alone, nor the "
                     "fastest kind's nodes with some of the others' (by default they are, with the same options, "
                     "and shown beside the ranking: a part of the cluster can be faster than all of it; "
                     "docs/mixed-clusters.md)");
  plan_cmd->add_flag("--explain", args->explain, "Where the best plan's time goes, and why the runner-up lost");
  add_training_options(*plan_cmd, args->training);
  plan_cmd->add_option("--verify-top", args->verify_top,
                       "Run the K best plans a few steps with the executor (mpirun), show predicted beside measured, "
                       "and rank them again by measurement; -o then writes the fastest measured")
      ->check(CLI::PositiveNumber);
  plan_cmd->add_option("--backend", args->verify_backend, "With --verify-top: cpu (Eigen + MPI) or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  plan_cmd->add_option("--ranks", args->verify_ranks, "With --verify-top: the ranks (default: the plans' GPUs)")
      ->check(CLI::PositiveNumber);
  plan_cmd->add_option("--threads", args->threads, "Simulation threads (default: all cores)")->check(CLI::PositiveNumber);
  // --catalog: the clusters are the catalogue's instances, priced by it (docs/budget.md).
  CLI::Option* catalog = plan_cmd->add_option(
      "--catalog", args->catalog,
      "A catalogue of instance types (YAML: name, node_from, price_per_hour, available): search every type at "
      "1, 2, 4, ... and all its instances, and choose the cheapest --tokens run (by --deadline) or the fastest "
      "within --budget; prints the frontier of cost against time");
  CLI::Option* budget = plan_cmd->add_option("--budget", args->budget,
                                             "With --catalog: the most the run may cost, e.g. \"2e6 USD\"");
  budget->needs(catalog)->excludes("--deadline");
  plan_cmd
      ->add_flag("--mix-instance-types", args->mix_instance_types,
                 "With --catalog: also every pair of instance types at each pair of counts, as one cluster of two GPU "
                 "kinds (a pipeline stage per kind; docs/mixed-clusters.md)")
      ->needs(catalog);
  plan_cmd
      ->add_option("--instance-counts", args->instance_counts,
                   "With --catalog: try only these numbers of instances of each type (comma-separated, e.g. 3,6,12), "
                   "instead of 1, 2, 4, ... and all; a type with none of them available is skipped")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->needs(catalog);
  for (const char* other : {"--topology", "--gpus", "--gpus-per-node", "--gpu-hour-price", "--optimize",
                            "--verify-top", "--baseline", "--robust", "--explain", "--trace"}) {
    catalog->excludes(other);
  }
  plan_cmd->callback([plan_cmd, args] {
    if (!plan_cmd->get_subcommands().empty()) return;
    args->defaults_used.clear();
    const PlanArgs defaults;
    if (plan_cmd->count("--topology") == 0) args->defaults_used.push_back("--topology " + defaults.files.topology);
    if (plan_cmd->count("--model") == 0) args->defaults_used.push_back("--model " + defaults.files.model);
    if (plan_cmd->count("--global-batch") == 0) {
      args->defaults_used.push_back(fmt::format("--global-batch {}", defaults.global_batch));
    }
    run_planner_command(*args);
  });
}

}  // namespace mpsim::cli
