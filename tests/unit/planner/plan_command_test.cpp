// `mpsim plan` end to end: the JSON contract, the plan file it writes (simulate takes it as is and
// predicts the same step time), the trace, determinism, the defaults, and the exit codes.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::CommandResult;
using mpsim::testing::repo;

CommandResult mpsim(const std::string& args, const std::string& cwd = ".") { return mpsim::testing::run_mpsim(args, cwd); }
std::filesystem::path scratch() { return mpsim::testing::scratch("plan-test"); }


namespace fs = std::filesystem;

std::string small_cluster_file() {
  const fs::path path = scratch() / "2x4.yaml";
  std::ofstream(path) << "cluster:\n  nodes: 2\n  gpus_per_node: 4\n  gpu: a100-80gb\n"
                         "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latency: \"2 us\" }\n"
                         "  inter_node: { kind: infiniband, bandwidth: \"200 Gb/s\", latency: \"5 us\", nics_per_node: 4 }\n";
  return path.string();
}

std::string small_args(int top = 3) {
  return "plan --topology " + small_cluster_file() + " --model " + repo("configs/models/gpt3-1.3b.yaml") +
         " --global-batch 16 --top " + std::to_string(top);
}

TEST(PlanCommand, JsonContractPlanFileAndTrace) {
  const std::string plan_file = (scratch() / "best.yaml").string();
  const std::string trace_file = (scratch() / "best.json").string();
  const CommandResult r = mpsim(small_args() + " --json --explain -o " + plan_file + " --trace " + trace_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;  // no progress line when not a terminal
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"best", "candidates", "pareto", "evaluated", "pruned", "search_time_s"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["candidates"].size(), 3u);
  EXPECT_EQ(j["candidates"][0]["plan"], j["best"]["plan"]);
  EXPECT_GT(j["evaluated"].get<int>(), 0);
  EXPECT_GT(j["pruned"].get<int>(), 0);
  const auto& best = j["best"];
  for (const char* key : {"step_time_s", "bubble_fraction", "tflops_per_gpu", "mfu", "devices", "plan"}) {
    EXPECT_TRUE(best.contains(key)) << key;
  }
  EXPECT_EQ(best["devices"].size(), 8u);
  EXPECT_EQ(best["plan"]["parallelism"]["tensor"].get<int>() * best["plan"]["parallelism"]["pipeline"].get<int>() * best["plan"]["parallelism"]["data"].get<int>(), 8);
  EXPECT_TRUE(j["explain"].contains("runner_up"));
  double previous = 0;
  for (const auto& c : j["candidates"]) {
    EXPECT_GE(c["step_time_s"].get<double>(), previous);
    previous = c["step_time_s"].get<double>();
  }

  // The plan file: simulate takes it unchanged and predicts the same step.
  const CommandResult sim = mpsim("simulate --topology " + small_cluster_file() + " --model " +
                                  repo("configs/models/gpt3-1.3b.yaml") + " --plan " + plan_file + " --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(sim.out)["step_time_s"].get<double>(), best["step_time_s"].get<double>());

  std::ifstream trace(trace_file);
  const auto t = nlohmann::json::parse(trace);
  EXPECT_FALSE(t["traceEvents"].empty());
  EXPECT_DOUBLE_EQ(t["mpsim"]["step_time_s"].get<double>(), best["step_time_s"].get<double>());
}

TEST(PlanCommand, SameOutputWhateverTheThreadCount) {
  auto one = nlohmann::json::parse(mpsim(small_args() + " --json --threads 1").out);
  auto four = nlohmann::json::parse(mpsim(small_args() + " --json --threads 4").out);
  one.erase("search_time_s");
  four.erase("search_time_s");
  EXPECT_EQ(one, four);
}

// The front's scope is stated: to within 2 % by default, exact or of the ranking's plans on request;
// the ranking is the same either way, and the near front simulates no more.
TEST(PlanCommand, ParetoScopeIsStated) {
  const auto near = nlohmann::json::parse(mpsim(small_args() + " --json").out);
  const auto exact = nlohmann::json::parse(mpsim(small_args() + " --json --pareto exact").out);
  EXPECT_EQ(near["search"]["pareto"], "near");
  EXPECT_DOUBLE_EQ(near["search"]["pareto_tolerance"].get<double>(), 0.02);
  EXPECT_EQ(exact["search"]["pareto_tolerance"].get<double>(), 0.0);
  EXPECT_LE(near["evaluated"].get<int>(), exact["evaluated"].get<int>());
  EXPECT_EQ(near["candidates"], exact["candidates"]);
  const CommandResult text = mpsim(small_args());
  EXPECT_NE(text.out.find("Pareto front (to within 2%"), std::string::npos) << text.out;
  const CommandResult simulated = mpsim(small_args() + " --pareto simulated");
  EXPECT_NE(simulated.out.find("Pareto front (of the plans simulated for the ranking)"), std::string::npos)
      << simulated.out;
}

TEST(PlanCommand, TableAndExplanation) {
  const CommandResult r = mpsim(small_args() + " --explain");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Why #1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#2 differs in"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("#2 differs in nothing"), std::string::npos) << r.out;
}

/// How many of the ranked plans of `plan_json` (a `plan --json` report) `plan export --to megatron` refuses.
int plans_megatron_refuses(const nlohmann::json& plan_json) {
  int refused = 0;
  for (const auto& candidate : plan_json["candidates"]) {
    const fs::path file = scratch() / "ranked.yaml";
    std::ofstream(file) << candidate["plan"].dump();  // JSON is YAML
    const CommandResult r = mpsim("plan export " + file.string() + " --to megatron --topology " +
                                  small_cluster_file() + " --model " + repo("configs/models/gpt3-1.3b.yaml"));
    if (r.exit_code != 0) ++refused;
  }
  return refused;
}

// --framework keeps only plans the framework runs: each ranked plan exports to it without error, where
// the same search without it ranks V-shaped schedules Megatron-LM does not run.
TEST(PlanCommand, FrameworkRanksOnlyPlansItsExportAccepts) {
  const std::string search = small_args(10) + " --optimize memory --json";
  const auto any = nlohmann::json::parse(mpsim(search).out);
  EXPECT_GT(plans_megatron_refuses(any), 0);
  EXPECT_EQ(any["search"]["pruned_framework"].get<int>(), 0);
  const CommandResult r = mpsim(search + " --framework megatron");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto megatron = nlohmann::json::parse(r.out);
  ASSERT_EQ(megatron["candidates"].size(), 10u);
  EXPECT_EQ(plans_megatron_refuses(megatron), 0);
  EXPECT_GT(megatron["search"]["pruned_framework"].get<int>(), 0);
  EXPECT_NE(mpsim(small_args() + " --framework megatron").out.find("that megatron cannot run"), std::string::npos);
  // The cheapest-job-size search keeps to the framework too: each size's plan exports.
  const CommandResult cost = mpsim("plan --topology " + small_cluster_file() + " --model " +
                                   repo("configs/models/gpt3-1.3b.yaml") +
                                   " --global-batch 16 --optimize cost --tokens 1e9 --framework megatron --json");
  ASSERT_EQ(cost.exit_code, 0) << cost.err;
  const auto cost_json = nlohmann::json::parse(cost.out);
  int exported = 0;
  for (const auto& size : cost_json["job_sizes"]) {
    if (!size.contains("best")) continue;
    const fs::path file = scratch() / "job-size.yaml";
    std::ofstream(file) << size["best"]["plan"].dump();
    const CommandResult r = mpsim("plan export " + file.string() + " --to megatron --topology " + small_cluster_file() +
                                  " --gpus " + std::to_string(size["gpus"].get<int>()) + " --model " +
                                  repo("configs/models/gpt3-1.3b.yaml"));
    EXPECT_EQ(r.exit_code, 0) << size["gpus"] << " GPUs: " << r.err;
    ++exported;
  }
  EXPECT_GT(exported, 0);
}

// Each ranked plan's step with every network link at half its bandwidth and with one GPU 15 % slow:
// neither is faster than the plan's own step, the slow GPU costs at most its 15 %, and --robust ranks the
// plans found by the worse of the two.
TEST(PlanCommand, SensitivityAndRobustRanking) {
  const auto j = nlohmann::json::parse(mpsim(small_args(10) + " --json").out);
  ASSERT_FALSE(j["candidates"].empty());
  bool network_matters = false;
  for (const auto& c : j["candidates"]) {
    const double step = c["step_time_s"], half = c["sensitivity"]["half_network_step_s"],
                 slow = c["sensitivity"]["slow_gpu_step_s"];
    EXPECT_GE(half, step * (1 - 1e-12)) << c["plan"].dump();
    EXPECT_GE(slow, step * (1 - 1e-12)) << c["plan"].dump();
    EXPECT_LE(slow, step * 1.15 * (1 + 1e-9)) << c["plan"].dump();
    network_matters = network_matters || half > step * 1.001;
  }
  EXPECT_TRUE(network_matters);  // 2 nodes: data-parallel traffic crosses InfiniBand
  const auto robust = nlohmann::json::parse(mpsim(small_args(10) + " --robust --json").out);
  double last = 0;
  for (const auto& c : robust["candidates"]) {
    const double worse = std::max(c["sensitivity"]["half_network_step_s"].get<double>(),
                                  c["sensitivity"]["slow_gpu_step_s"].get<double>());
    EXPECT_GE(worse, last);
    last = worse;
  }
  const CommandResult text = mpsim(small_args() + " --robust");
  EXPECT_NE(text.out.find("net/2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Ranked by the worse of the two what-ifs"), std::string::npos) << text.out;
}

// --baseline: the team's own plan, simulated on the same inputs and shown beside the ranking with what
// differs from #1. A plan of the searched space cannot beat the best of it.
TEST(PlanCommand, BaselineIsShownBesideTheRanking) {
  const fs::path file = scratch() / "today.yaml";
  std::ofstream(file) << "parallelism: { tensor: 1, pipeline: 2 }\nbatch: { global: 16, micro: 1 }\n"
                         "schedule: 1f1b\nrecompute: full\nzero: 0\n";
  const CommandResult r = mpsim(small_args() + " --json --baseline " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("baseline"));
  EXPECT_GE(j["baseline"]["step_time_s"].get<double>(), j["best"]["step_time_s"].get<double>());
  EXPECT_EQ(j["baseline"]["plan"]["parallelism"]["pipeline"], 2);
  EXPECT_FALSE(j["baseline"]["differences"].empty());
  EXPECT_TRUE(j["baseline"].contains("sensitivity"));
  const CommandResult text = mpsim(small_args() + " --baseline " + file.string());
  EXPECT_NE(text.out.find("Your plan (" + file.string() + "): step"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("it differs from #1 in "), std::string::npos) << text.out;
  // A baseline that is not a plan for these inputs is bad input naming its file.
  std::ofstream(file) << "parallelism: { tensor: 3 }\n";
  const CommandResult bad = mpsim(small_args() + " --baseline " + file.string());
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.err.find("today.yaml"), std::string::npos) << bad.err;
}

// --zero bounds the ZeRO stages searched; a stage that is not one is refused naming the option.
TEST(PlanCommand, ZeroStagesCanBeBounded) {
  const auto j = nlohmann::json::parse(mpsim(small_args(10) + " --zero 0,1 --json").out);
  ASSERT_FALSE(j["candidates"].empty());
  for (const auto& c : j["candidates"]) EXPECT_LE(c["plan"]["zero"].get<int>(), 1) << c["plan"].dump();
  const CommandResult bad = mpsim(small_args() + " --zero 1,4");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--zero 1,4"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("unknown ZeRO stage '4'"), std::string::npos) << bad.err;
}

// A field of the cluster's GPU kind (a built-in one, named by id) takes --set in plan as in simulate.
TEST(PlanCommand, GpuKindFieldsTakeSet) {
  const auto best_step = [](const std::string& set) {
    const CommandResult r = mpsim(small_args(1) + " --json " + set);
    EXPECT_EQ(r.exit_code, 0) << set << "\n" << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["best"]["step_time_s"].get<double>() : 0.0;
  };
  EXPECT_GT(best_step("--set topology.gpu.matmul_efficiency=0.2"), best_step("") * 1.5);
  const CommandResult unknown = mpsim(small_args(1) + " --set topology.gpu.memory_bandwith=1");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("did you mean 'memory_bandwidth'"), std::string::npos) << unknown.err;
}

// --tensor, --context, --pipeline and --expert hold an axis to the degrees they list; a degree the
// cluster or the model cannot hold is a one-line error naming the flag.
TEST(PlanCommand, AxesCanBeFixed) {
  const auto j = nlohmann::json::parse(mpsim(small_args(10) + " --tensor 2 --pipeline 1,2 --json").out);
  ASSERT_FALSE(j["candidates"].empty());
  for (const auto& c : j["candidates"]) {
    EXPECT_EQ(c["plan"]["parallelism"]["tensor"].get<int>(), 2) << c["plan"].dump();
    EXPECT_LE(c["plan"]["parallelism"]["pipeline"].get<int>(), 2) << c["plan"].dump();
  }
  // Fixed where the search would not go by itself: context 2 leaves 1024 of gpt3-1.3b's 2048 tokens
  // per rank, under the search's 4096.
  const auto context = nlohmann::json::parse(mpsim(small_args(3) + " --context 2 --json").out);
  ASSERT_FALSE(context["candidates"].empty());
  for (const auto& c : context["candidates"]) EXPECT_EQ(c["plan"]["parallelism"]["context"].get<int>(), 2);

  const auto error_of = [](const std::string& flags) {
    const CommandResult r = mpsim(small_args() + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    return r.err;
  };
  EXPECT_EQ(error_of("--tensor 8"), "mpsim: error: --tensor 8: a tensor-parallel group stays within a node, and 8 "
                                    "does not divide its 4 GPUs\n");
  EXPECT_EQ(error_of("--pipeline 3"), "mpsim: error: --pipeline 3: 3 does not divide the job's 8 GPUs\n");
  EXPECT_EQ(error_of("--expert 2"), "mpsim: error: --expert 2: the model has no experts to spread over 2 ranks\n");
  EXPECT_NE(error_of("--tensor 2,x").find("'x' is not a degree"), std::string::npos);
  EXPECT_NE(error_of("--context 0").find("'0' is not a degree"), std::string::npos);
}

// An MoE model's expert degree can be fixed: every ranked plan has it.
TEST(PlanCommand, ExpertDegreeCanBeFixed) {
  const std::string args = "plan --topology " + small_cluster_file() + " --model " +
                           repo("configs/models/cpu-moe-tiny.yaml") + " --global-batch 16 --top 5 --json";
  const auto j = nlohmann::json::parse(mpsim(args + " --expert 2").out);
  ASSERT_FALSE(j["candidates"].empty());
  for (const auto& c : j["candidates"]) EXPECT_EQ(c["plan"]["parallelism"]["expert"].get<int>(), 2) << c["plan"].dump();
}

// The fields a plan differs in leave out what cannot matter for the model: a dense model's expert
// degrees (plan_json writes expert_tensor, which follows the tensor degree).
TEST(PlanCommand, DifferencesNameOnlyFieldsThatMatter) {
  const fs::path file = scratch() / "dense-today.yaml";
  std::ofstream(file) << "parallelism: { tensor: 1, pipeline: 2 }\nbatch: { global: 16, micro: 1 }\n"
                         "schedule: 1f1b\nrecompute: full\nzero: 0\n";
  const auto j = nlohmann::json::parse(mpsim(small_args() + " --json --explain --tensor 2 --baseline " + file.string()).out);
  ASSERT_TRUE(j.contains("baseline"));
  const auto& differences = j["baseline"]["differences"];
  ASSERT_FALSE(differences.empty());
  for (const auto& d : differences) {
    const std::string text = d.get<std::string>();
    EXPECT_NE(text.rfind("expert", 0), 0u) << text;
    EXPECT_EQ(text.find("moe_"), std::string::npos) << text;
  }
  // The tensor degree differs (2 against 1) and is named; expert_tensor, which follows it, is not.
  EXPECT_NE(std::find(differences.begin(), differences.end(), "tensor 2 vs 1"), differences.end()) << differences.dump();
}

// With one pipeline stage every schedule runs the same loop: plans that differ only in its name are one
// row, the names listed in it.
TEST(PlanCommand, OneStageScheduleNamesAreOneRow) {
  const CommandResult r = mpsim(small_args(10));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1f1b / "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in the schedule's name"), std::string::npos) << r.out;
}

TEST(PlanCommand, DefaultsAreTheReadmeJob) {
  const CommandResult r = mpsim("plan --top 1 --threads 2", repo(""));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gpt3-13b on 4x AWS p4d.24xlarge (32 GPUs), global batch 256"), std::string::npos) << r.out;
  // It says which inputs were defaults, and only those.
  EXPECT_NE(r.out.find("Not given, so the defaults: --topology topologies/4x-p4d.yaml, --model "
                       "configs/models/gpt3-13b.yaml, --global-batch 256"),
            std::string::npos)
      << r.out;
  const auto given = nlohmann::json::parse(mpsim(small_args() + " --json").out);
  EXPECT_TRUE(given["search"]["defaults_used"].empty());
  EXPECT_EQ(mpsim(small_args()).out.find("Not given"), std::string::npos);
}

// The README's job keeps the default memory margin (planner/memory_margin.h): its #1 peaks at most
// (1 - margin) of an A100 40GB's memory on every GPU. Without the margin its #1 was a plan at 39.7 of
// the 40 GiB (issue 35); the fastest plan the margin leaves out (today 37.6 GiB), no slower than the
// #1, is shown under the ranking with a warning and is the JSON's within_margin, and --memory-margin 0
// ranks it #1 again when ranking by step time alone (--rank-tolerance 0; by default a plan safe from
// the memory model's worst error goes first).
TEST(PlanCommand, ReadmeJobKeepsTheMemoryMargin) {
  const CommandResult r = mpsim("plan --top 1 --threads 2 --json", repo(""));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double margin = j["search"]["memory_margin"].get<double>();
  EXPECT_DOUBLE_EQ(margin, 0.16);
  const auto& best = j["best"];
  for (const auto& device : best["devices"]) {
    EXPECT_LE(device["peak_memory_bytes"].get<double>(), device["memory_capacity_bytes"].get<double>() * (1 - margin))
        << device["id"];
  }
  const double usable = j["search"]["usable_memory_bytes"].get<double>();
  const double capacity = best["devices"][0]["memory_capacity_bytes"].get<double>();
  EXPECT_LE(best["peak_memory_bytes"].get<double>(), usable);
  EXPECT_GT(j["search"]["within_margin"].get<int>(), 0);
  const auto& within = j["within_margin"];
  ASSERT_TRUE(within.is_object()) << j["search"].dump();
  EXPECT_GT(within["peak_memory_bytes"].get<double>(), usable);
  EXPECT_LE(within["peak_memory_bytes"].get<double>(), capacity);
  // No slower than the #1.
  EXPECT_LE(within["step_time_s"].get<double>(), best["step_time_s"].get<double>());
  // The #1 carries its bands as simulate gives them, and its peak band's top fits the capacity: the
  // margin covers it (calibration::memory_spread).
  ASSERT_TRUE(best["step_time_band_s"].is_array()) << best.dump().substr(0, 400);
  EXPECT_LT(best["step_time_band_s"][0].get<double>(), best["step_time_band_s"][1].get<double>());
  ASSERT_TRUE(best["peak_memory_band_bytes"].is_array());
  EXPECT_LT(best["peak_memory_band_bytes"][0].get<double>(), best["peak_memory_bytes"].get<double>());
  EXPECT_GT(best["peak_memory_band_bytes"][1].get<double>(), best["peak_memory_bytes"].get<double>());
  EXPECT_LE(best["peak_memory_band_bytes"][1].get<double>(), capacity);

  const CommandResult text = mpsim("plan --top 1 --threads 2", repo(""));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Memory a plan may use: 33.6 GiB (40 GiB less a 16% margin) per GPU"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("of them only by the margin)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("faster than #1 is not ranked: its peak, "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("of 40 GiB, is within the 16% memory margin"), std::string::npos) << text.out;

  const auto off =
      nlohmann::json::parse(mpsim("plan --top 1 --threads 2 --json --memory-margin 0 --rank-tolerance 0", repo("")).out);
  EXPECT_EQ(off["best"]["plan"], within["plan"]);
  EXPECT_EQ(off["search"]["within_margin"].get<int>(), 0);
  EXPECT_TRUE(off["within_margin"].is_null());
}

// Of the README job's plans within the ranking tolerance of the fastest (the median error of predicted
// ratios, planner/headroom_choice.h), #1 is the fastest whose peak fits 40 GiB even if under-predicted
// as much as the worst measured peak (20.9 %). Under the default margin (16 %) the fastest ranked plan
// is such a plan; under a 7 % margin the fastest (36.2 GiB) ranks and is not, and #1 is a slower one.
// --rank-tolerance 0 puts the fastest first again.
TEST(PlanCommand, ReadmeJobPutsTheFastestSafePlanOfTheToleranceFirst) {
  const CommandResult r = mpsim("plan --threads 2 --json --memory-margin 7", repo(""));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranked_by"], "step_time_then_headroom");
  const auto& choice = j["headroom_choice"];
  ASSERT_TRUE(choice.is_object());
  const double tolerance = choice["tolerance"].get<double>();
  EXPECT_EQ(j["search"]["rank_tolerance"].get<double>(), tolerance);
  EXPECT_GT(tolerance, 0.0);
  EXPECT_LT(tolerance, 0.1);
  const auto& best = j["best"];
  const auto& fastest = choice["fastest"];
  const double best_s = best["step_time_s"].get<double>(), fastest_s = fastest["step_time_s"].get<double>();
  EXPECT_GE(best_s, fastest_s);
  EXPECT_LE(best_s, fastest_s * (1 + tolerance));
  const double capacity = best["devices"][0]["memory_capacity_bytes"].get<double>();
  const double worst = 0.209;  // planner/memory_margin.h kWorstMeasuredUnderPrediction
  for (const auto& device : best["devices"]) {
    EXPECT_LE(device["peak_memory_bytes"].get<double>() / (1 - worst), device["memory_capacity_bytes"].get<double>());
  }
  EXPECT_GT(fastest["peak_memory_bytes"].get<double>() / (1 - worst), capacity);
  // No ranked plan within the tolerance that is safe is faster than #1.
  for (const auto& c : j["candidates"]) {
    if (c["peak_memory_bytes"].get<double>() / (1 - worst) <= capacity) {
      EXPECT_GE(c["step_time_s"].get<double>(), best_s * (1 - 1e-3));
    }
  }
  EXPECT_EQ(j["candidates"][0]["plan"], best["plan"]);

  const auto by_step =
      nlohmann::json::parse(mpsim("plan --threads 2 --json --memory-margin 7 --rank-tolerance 0", repo("")).out);
  EXPECT_EQ(by_step["ranked_by"], "step_time");
  EXPECT_TRUE(by_step["headroom_choice"].is_null());
  EXPECT_EQ(by_step["best"]["plan"], fastest["plan"]);

  // Under the default margin the fastest ranked plan is safe itself, and #1.
  const auto by_default = nlohmann::json::parse(mpsim("plan --threads 2 --json", repo("")).out);
  EXPECT_TRUE(by_default["headroom_choice"].is_null());
  for (const auto& device : by_default["best"]["devices"]) {
    EXPECT_LE(device["peak_memory_bytes"].get<double>() / (1 - worst), device["memory_capacity_bytes"].get<double>());
  }

  const CommandResult text = mpsim("plan --top 3 --threads 2 --memory-margin 7", repo(""));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("slower than the fastest plan found"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("would still fit if it were 26% higher"), std::string::npos) << text.out;
}

TEST(PlanCommand, NoFeasiblePlanExitsOneWithTheReason) {
  const CommandResult r = mpsim("plan --topology " + repo("topologies/dgx-a100.yaml") + " --model " +
                                repo("configs/models/gpt3-175b.yaml") + " --global-batch 8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("mpsim: error: no feasible plan: gpt3-175b needs at least"), std::string::npos) << r.err;
  // What a GPU may hold: its 80 GiB less the default memory margin.
  EXPECT_NE(r.err.find("8 x 67.2 GiB (80 GiB less a 16% margin) available"), std::string::npos) << r.err;
}

// The optimizer's state format is the recipe's, set in every plan: the best plan carries it, and its
// optimizer state is what the engine's rule gives it (bf16 moments beside FusedAdam's bf16 remainders:
// 2 + 2 + 2 bytes a parameter against Adam's 4 + 4 + 4, half of it, on every GPU).
TEST(PlanCommand, PrecisionAwareOptimizerIsInEveryPlan) {
  const std::string plan_file = (scratch() / "precision_aware.yaml").string();
  const CommandResult r = mpsim(small_args(1) + " --json --precision-aware-optimizer --exp-avg-dtype bf16 "
                                "--exp-avg-sq-dtype bf16 -o " + plan_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& plan = j["best"]["plan"];
  EXPECT_TRUE(plan["precision_aware_optimizer"].get<bool>());
  EXPECT_EQ(plan["exp_avg_dtype"], "bf16");
  EXPECT_EQ(plan["exp_avg_sq_dtype"], "bf16");
  const std::string simulate = "simulate --topology " + small_cluster_file() + " --model " +
                               repo("configs/models/gpt3-1.3b.yaml") + " --plan " + plan_file + " --json";
  const CommandResult with = mpsim(simulate);
  const CommandResult without = mpsim(simulate + " --set plan.precision_aware_optimizer=false --set plan.exp_avg_dtype=fp32 "
                                      "--set plan.exp_avg_sq_dtype=fp32");
  ASSERT_EQ(with.exit_code, 0) << with.err;
  ASSERT_EQ(without.exit_code, 0) << without.err;
  const auto with_devices = nlohmann::json::parse(with.out)["devices"];
  const auto without_devices = nlohmann::json::parse(without.out)["devices"];
  ASSERT_EQ(with_devices.size(), without_devices.size());
  for (std::size_t i = 0; i < with_devices.size(); ++i) {
    const double optimizer = with_devices[i]["memory"]["optimizer"].get<double>();
    EXPECT_NEAR(optimizer / without_devices[i]["memory"]["optimizer"].get<double>(), 0.5, 1e-6) << i;
  }
  // Moments other than fp32 without it: Megatron-Core refuses them, so does the command.
  const CommandResult refused = mpsim(small_args(1) + " --exp-avg-dtype bf16");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("mpsim: error: --exp-avg-dtype bf16: moments other than fp32 need --precision-aware-optimizer"),
            std::string::npos)
      << refused.err;
}

TEST(PlanCommand, BadInputExitsTwo) {
  EXPECT_EQ(mpsim(small_args() + " --optimize fastest").exit_code, 2);
  const CommandResult schedules = mpsim(small_args() + " --schedules 1f1b,warp");
  EXPECT_EQ(schedules.exit_code, 2);
  EXPECT_NE(schedules.err.find("unknown schedule 'warp'"), std::string::npos) << schedules.err;
  const CommandResult recompute = mpsim(small_args() + " --recompute none,most");
  EXPECT_EQ(recompute.exit_code, 2);
  EXPECT_NE(recompute.err.find("unknown recomputation 'most'"), std::string::npos) << recompute.err;
  // --gpus takes the first N GPUs of the topology (as simulate --gpus): not more than it has, not zero.
  const CommandResult more = mpsim(small_args() + " --gpus 64");
  EXPECT_EQ(more.exit_code, 2);
  EXPECT_NE(more.err.find("mpsim: error: --gpus 64: the topology has"), std::string::npos) << more.err;
  EXPECT_EQ(mpsim(small_args() + " --gpus 0").exit_code, 2);
  EXPECT_EQ(mpsim("plan --topology missing.yaml --model " + repo("configs/models/gpt3-1.3b.yaml")).exit_code, 2);
}

TEST(PlanCommand, OptionsNarrowTheSearch) {
  const CommandResult r =
      mpsim(small_args() + " --json --schedules 1f1b,gpipe --recompute full --max-tensor 2 --pareto simulated");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& c : j["candidates"]) {
    const std::string schedule = c["plan"]["schedule"];
    EXPECT_TRUE(schedule == "1f1b" || schedule == "gpipe") << schedule;
    EXPECT_EQ(c["plan"]["recompute"], "full");
    EXPECT_LE(c["plan"]["parallelism"]["tensor"].get<int>(), 2);
  }
}

TEST(PlanCommand, AttentionKernelInEveryPlanItsFileAndTheSimulation) {
  const std::string plan_file = (scratch() / "fa2.yaml").string();
  const CommandResult r = mpsim(small_args() + " --json --attention-kernel fa2 --pareto simulated -o " + plan_file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& c : j["candidates"]) EXPECT_EQ(c["plan"]["attention_kernel"], "fa2");
  // Without it the field is null, and the plan file names it so that simulate runs the same kernels.
  const auto unset = nlohmann::json::parse(mpsim(small_args() + " --json --pareto simulated").out);
  EXPECT_FALSE(unset["best"]["plan"].contains("attention_kernel"));
  const CommandResult sim = mpsim("simulate --topology " + small_cluster_file() + " --model " +
                                  repo("configs/models/gpt3-1.3b.yaml") + " --plan " + plan_file + " --json");
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const auto report = nlohmann::json::parse(sim.out);
  EXPECT_EQ(report["plan"]["attention_kernel"], "fa2");
  EXPECT_DOUBLE_EQ(report["step_time_s"].get<double>(), j["best"]["step_time_s"].get<double>());
  // A generation the GPU kind has no rate for is refused by name.
  const CommandResult fa4 = mpsim(small_args() + " --attention-kernel fa4");
  EXPECT_EQ(fa4.exit_code, 2);
  EXPECT_NE(fa4.err.find("--attention-kernel fa4"), std::string::npos) << fa4.err;
  EXPECT_NE(fa4.err.find("has no attention rate for fa4 kernels"), std::string::npos) << fa4.err;
  EXPECT_EQ(mpsim(small_args() + " --attention-kernel fa9").exit_code, 2);
}

TEST(PlanCommand, GpusCutsTheCluster) {
  const CommandResult r = mpsim(small_args() + " --gpus 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["best"]["devices"].size(), 4u);
}

TEST(PlanCommand, CheckStillWorks) {
  const CommandResult r = mpsim("plan check " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " --topology " +
                                repo("topologies/4x-p4d.yaml") + " --model " + repo("configs/models/gpt3-13b.yaml"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out;
}

}  // namespace
