// `simulate --samples` and `plan --samples` end to end (docs/stragglers.md): the report's fields, the
// unsampled report unchanged beside them, determinism byte for byte over thread counts, spread zero,
// the training estimate on the mean step, the planner's p95 and --robust with it, and the errors.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::CommandResult;
using mpsim::testing::repo;
using nlohmann::json;
namespace fs = std::filesystem;

CommandResult mpsim(const std::string& args) { return mpsim::testing::run_mpsim(args); }

/// GPT-3 1.3B on 2 x 4 A100, TP 2 x PP 2 x DP 2: a step of every kind of traffic, quick to simulate.
std::string inputs() {
  const fs::path dir = mpsim::testing::scratch("step-sampling");
  const fs::path cluster = dir / "2x4.yaml";
  const fs::path plan = dir / "plan.yaml";
  std::ofstream(cluster) << "cluster:\n  nodes: 2\n  gpus_per_node: 4\n  gpu: a100-80gb\n"
                            "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latency: \"2 us\" }\n"
                            "  inter_node: { kind: infiniband, bandwidth: \"200 Gb/s\", latency: \"5 us\", "
                            "nics_per_node: 4 }\n";
  std::ofstream(plan) << "parallelism: { tensor: 2, pipeline: 2, data: 2 }\nbatch: { global: 16, micro: 1 }\n"
                         "schedule: 1f1b\n";
  return " --topology " + cluster.string() + " --model " + repo("configs/models/gpt3-1.3b.yaml") + " --plan " +
         plan.string();
}

std::string simulate(const std::string& extra) { return "simulate" + inputs() + " " + extra; }

json run_json(const std::string& args) {
  const CommandResult r = mpsim(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return json::parse(r.out);
}

TEST(SimulateSamples, QuantilesBesideTheUnchangedReport) {
  const json plain = run_json(simulate("--json"));
  json sampled = run_json(simulate("--json --samples 16 --gpu-speed-spread 5%"));
  const double step = plain["step_time_s"];
  const json& q = sampled["step_time_quantiles_s"];
  const double p50 = q["p50"], p95 = q["p95"], p99 = q["p99"], mean = sampled["step_time_mean_s"];
  EXPECT_LE(p50, p95);
  EXPECT_LE(p95, p99);
  EXPECT_LE(p99, sampled["step_time_sampling"]["max_s"].get<double>());
  EXPECT_GE(mean, sampled["step_time_sampling"]["min_s"].get<double>());
  // Eight GPUs in lockstep wait for the slowest: the median of the max of 8 lognormals of spread 5 % is
  // exp(0.05 Φ⁻¹(0.5^(1/8))) = exp(0.05 x 1.42) = 1.07 on the compute, so p50 is above the unsampled step.
  EXPECT_GT(p50, step);
  EXPECT_EQ(sampled["step_time_sampling"]["samples"], 16);
  EXPECT_EQ(sampled["step_time_sampling"]["distribution"], "lognormal");
  EXPECT_DOUBLE_EQ(sampled["step_time_sampling"]["gpu_speed_spread"].get<double>(), 0.05);
  EXPECT_EQ(sampled["step_time_sampling"]["seed"], 0);
  // Without the new fields, the report is the unsampled one.
  for (const char* key : {"step_time_quantiles_s", "step_time_mean_s", "step_time_sampling"}) sampled.erase(key);
  EXPECT_EQ(sampled.dump(), plain.dump());
}

TEST(SimulateSamples, SameSeedSameBytesForAnyThreadCount) {
  const std::string args = simulate("--json --samples 12 --gpu-speed-spread 5% --link-speed-spread 3% --seed 5");
  const CommandResult one = mpsim(args + " --threads 1");
  const CommandResult three = mpsim(args + " --threads 3");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, three.out);
  const CommandResult other =
      mpsim(simulate("--json --samples 12 --gpu-speed-spread 5% --link-speed-spread 3% --seed 6"));
  EXPECT_NE(json::parse(other.out)["step_time_quantiles_s"], json::parse(one.out)["step_time_quantiles_s"]);
}

TEST(SimulateSamples, SpreadZeroIsTheUnsampledStep) {
  const json j = run_json(simulate("--json --samples 3 --gpu-speed-spread 0%"));
  const double step = j["step_time_s"];
  for (const char* q : {"p50", "p95", "p99"}) EXPECT_EQ(j["step_time_quantiles_s"][q].get<double>(), step) << q;
  EXPECT_EQ(j["step_time_mean_s"].get<double>(), step);
}

// Over a long run the steps average out: the training estimate takes the mean step.
TEST(SimulateSamples, TrainingTakesTheMeanStep) {
  const json j = run_json(simulate("--json --samples 8 --gpu-speed-spread 10% --tokens 1B"));
  const double steps = j["training"]["steps"];
  EXPECT_NEAR(j["training"]["compute_s"].get<double>(), steps * j["step_time_mean_s"].get<double>(),
              1e-9 * steps * j["step_time_mean_s"].get<double>());
}

TEST(SimulateSamples, TextPrintsTheQuantiles) {
  const CommandResult r = mpsim(simulate("--samples 8 --gpu-speed-spread 5%"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Over 8 sampled steps (GPU speed spread 5%, seed 0): mean "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", p95 "), std::string::npos) << r.out;
}

TEST(SimulateSamples, BadFlagsAreOneLineErrorsNamingTheFlag) {
  const struct {
    const char* flags;
    const char* named;
  } cases[] = {
      {"--samples 0 --gpu-speed-spread 5%", "--samples 0"},
      {"--samples -3 --gpu-speed-spread 5%", "--samples -3"},
      {"--samples 2.5 --gpu-speed-spread 5%", "--samples 2.5"},
      {"--samples many --gpu-speed-spread 5%", "--samples many"},
      {"--samples 4 --gpu-speed-spread -5%", "--gpu-speed-spread -5%"},
      {"--samples 4 --gpu-speed-spread 5", "--gpu-speed-spread 5"},
      {"--samples 4 --link-speed-spread fast", "--link-speed-spread fast"},
      {"--samples 4 --gpu-speed-spread 5% --seed -1", "--seed -1"},
      {"--samples 4", "--gpu-speed-spread"},
      {"--gpu-speed-spread 5%", "--samples N"},
      {"--link-speed-spread 5%", "--samples N"},
      {"--seed 3", "--samples N"},
      {"--samples 4 --gpu-speed-spread 5% --sweep plan.microbatches=4,8", "--sweep"},
      {"--samples 4 --gpu-speed-spread 5% --trace /dev/null", "--trace"},
  };
  for (const auto& c : cases) {
    const CommandResult r = mpsim(simulate(c.flags));
    EXPECT_EQ(r.exit_code, 2) << c.flags << "\n" << r.out;
    EXPECT_NE(r.err.find(c.named), std::string::npos) << c.flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

/// The planner on the same small cluster, its 4 best plans.
std::string plan(const std::string& extra) {
  const fs::path dir = mpsim::testing::scratch("step-sampling");
  return "plan --topology " + (dir / "2x4.yaml").string() + " --model " + repo("configs/models/gpt3-1.3b.yaml") +
         " --global-batch 16 --top 4 " + extra;
}

// Each ranked plan gets its p95 and p95/p50 over the same sampled clusters; with --samples, --robust
// ranks by p95; without --robust the ranking is the unsampled one.
TEST(PlanSamples, EachRankedPlanGetsItsP95AndRobustRanksByIt) {
  (void)inputs();  // writes the cluster file
  const json plain = run_json(plan("--json"));
  const json sampled = run_json(plan("--json --samples 8 --gpu-speed-spread 5%"));
  ASSERT_EQ(sampled["candidates"].size(), plain["candidates"].size());
  EXPECT_EQ(sampled["ranked_by"], "step_time");
  for (std::size_t i = 0; i < sampled["candidates"].size(); ++i) {
    const json& c = sampled["candidates"][i];
    EXPECT_EQ(c["plan"], plain["candidates"][i]["plan"]);
    const double p50 = c["step_time_quantiles_s"]["p50"], p95 = c["step_time_quantiles_s"]["p95"];
    EXPECT_DOUBLE_EQ(c["step_time_p95_over_p50"].get<double>(), p95 / p50);
    EXPECT_GE(p95, p50);
  }
  EXPECT_EQ(sampled["best"]["step_time_quantiles_s"], sampled["candidates"][0]["step_time_quantiles_s"]);
  const json robust = run_json(plan("--json --robust --samples 8 --gpu-speed-spread 5%"));
  EXPECT_EQ(robust["ranked_by"], "p95");
  double last = 0;
  for (const json& c : robust["candidates"]) {
    const double p95 = c["step_time_quantiles_s"]["p95"];
    EXPECT_GE(p95, last);
    last = p95;
  }
  EXPECT_EQ(run_json(plan("--json --robust"))["ranked_by"], "worse_what_if");
  const CommandResult text = mpsim(plan("--robust --samples 8 --gpu-speed-spread 5%"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("p95/p50"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Ranked by p95 of the sampled steps"), std::string::npos) << text.out;
  // The same sampled steps for any thread count: the JSON differs at most in the search's own time.
  json one = run_json(plan("--json --samples 8 --gpu-speed-spread 5% --link-speed-spread 5% --threads 1"));
  json three = run_json(plan("--json --samples 8 --gpu-speed-spread 5% --link-speed-spread 5% --threads 3"));
  one.erase("search_time_s");
  three.erase("search_time_s");
  EXPECT_EQ(one.dump(), three.dump());
  const CommandResult cost = mpsim(plan("--optimize cost --tokens 1B --samples 8 --gpu-speed-spread 5%"));
  EXPECT_EQ(cost.exit_code, 2);
  EXPECT_NE(cost.err.find("--samples"), std::string::npos) << cost.err;
}

}  // namespace
