// The plan object of `plan --json` is a plan file: every candidate of the README's job, saved as a
// file, simulates to the step time the search listed for it and exports to the frameworks that run it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/plan/schedule_traits.h"
#include "tests/support/run_mpsim.h"

namespace {

namespace fs = std::filesystem;
using mpsim::testing::CommandResult;
using mpsim::testing::repo;
using mpsim::testing::run_mpsim;

TEST(PlanJson, EveryCandidateOfTheReadmeJobIsAPlanFile) {
  // `mpsim plan` without inputs is the README's job: GPT-3 13B on 4x p4d.24xlarge, global batch 256.
  const CommandResult search = run_mpsim("plan --json --top 12");
  ASSERT_EQ(search.exit_code, 0) << search.err;
  const nlohmann::json result = nlohmann::json::parse(search.out);
  ASSERT_GE(result["candidates"].size(), 6u);
  const std::string inputs =
      " --topology " + repo("topologies/4x-p4d.yaml") + " --model " + repo("configs/models/gpt3-13b.yaml");
  const fs::path dir = mpsim::testing::scratch("plan-json");
  int index = 0;
  for (const nlohmann::json& candidate : result["candidates"]) {
    const fs::path file = dir / ("candidate-" + std::to_string(index++) + ".json");
    std::ofstream(file) << candidate["plan"].dump(2);
    SCOPED_TRACE(candidate["plan"].dump());

    const CommandResult simulated = run_mpsim("simulate --plan " + file.string() + inputs + " --json");
    ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
    const nlohmann::json report = nlohmann::json::parse(simulated.out);
    EXPECT_DOUBLE_EQ(report["step_time_s"].get<double>(), candidate["step_time_s"].get<double>());
    EXPECT_EQ(report["plan"], candidate["plan"]);  // and the report names the same plan

    const std::string schedule = candidate["plan"]["schedule"];
    const auto kind = std::find_if(std::begin(mpsim::plan::kScheduleTraits), std::end(mpsim::plan::kScheduleTraits),
                                   [&](const auto& t) { return t.name == schedule; });
    ASSERT_NE(kind, std::end(mpsim::plan::kScheduleTraits));
    const bool pipelined = candidate["plan"]["parallelism"]["pipeline"].get<int>() > 1;
    // Megatron-Bridge's export writes Megatron-Core's default rank order only (Megatron-LM's has a flag
    // for tp-pp-dp): the README job's top 12 hold interleaved plans in both placements.
    const bool default_rank_order = candidate["plan"]["placement"] == "tp-dp-pp";
    for (const std::string framework : {"megatron", "nemo", "deepspeed", "torchtitan", "sagemaker"}) {
      const CommandResult exported = run_mpsim("plan export " + file.string() + " --to " + framework + inputs);
      // A framework that runs the schedule takes the plan (these plans hold nothing else a framework
      // refuses but ZeRO stages, NeMo's rank order and DeepSpeed's and SageMaker's own limits); any refusal is one line
      // at a plan field.
      if (exported.exit_code != 0) {
        EXPECT_EQ(exported.exit_code, 2) << framework;
        EXPECT_NE(exported.err.find("cannot express this"), std::string::npos) << framework << ": " << exported.err;
        EXPECT_EQ(std::count(exported.err.begin(), exported.err.end(), '\n'), 1) << exported.err;
      }
      const bool runs = !pipelined || (framework == "megatron" || framework == "nemo" ? kind->megatron
                                       : framework == "torchtitan" ? kind->torchtitan_run != mpsim::plan::TorchTitanRun::Never
                                       : framework == "deepspeed"  ? kind->deepspeed
                                                                   : !kind->sagemaker.empty());
      if (framework == "megatron") {
        EXPECT_EQ(exported.exit_code == 0, runs) << framework << ": " << exported.err;
      } else if (framework == "nemo") {
        EXPECT_EQ(exported.exit_code == 0, runs && default_rank_order) << framework << ": " << exported.err;
      } else if (!runs) {
        EXPECT_NE(exported.exit_code, 0) << framework;
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
