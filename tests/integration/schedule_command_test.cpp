// mpsim schedule show | export | import end to end: the streams a plan runs, PyTorch's CSV written
// atomically and read back, and an imported order simulating as the generator's.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::CommandResult;
using mpsim::testing::repo;

const std::string kInputs = " --topology " + repo("topologies/4x-p4d.yaml") + " --model " +
                            repo("configs/models/gpt3-13b.yaml") + " --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") +
                            " --set plan.microbatches=8";

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ScheduleCommand, ShowsEachRanksStream) {
  const CommandResult run = mpsim::testing::run_mpsim("schedule show" + kInputs + " --set plan.schedule=dualpipev");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out.rfind("rank 0: F0.0 F1.0 F2.0 F0.1 I0.1 W0.1 F1.1 F3.0&B1.1", 0), 0u) << run.out;
  EXPECT_NE(run.out.find("\nrank 1: F0.0 F0.1"), std::string::npos) << run.out;
  const CommandResult comm = mpsim::testing::run_mpsim("schedule show --comm" + kInputs);
  ASSERT_EQ(comm.exit_code, 0) << comm.err;
  EXPECT_NE(comm.out.find("sA0"), std::string::npos);
  EXPECT_NE(comm.out.find("OPT"), std::string::npos);
}

// With overlap.moe_expert_comm a plan runs Megatron-Core's combined 1F1B, and show says so.
TEST(ScheduleCommand, ShowsTheCombinedOrderOfAnExpertOverlap) {
  const CommandResult run = mpsim::testing::run_mpsim(
      "schedule show --topology " + repo("topologies/dgx-h100.yaml") + " --model " + repo("configs/models/mixtral-8x7b.yaml") +
      " --plan " + repo("configs/plans/cpu-tiny-1f1b-pp2.yaml") +
      " --set plan.pipeline=1 --set plan.tensor=1 --set plan.parallelism.expert=8 --set plan.data=8"
      " --set plan.batch.global=24 --set plan.batch.micro=1 --set plan.overlap.moe_expert_comm=true");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "rank 0: F0 F1&B0 F2&B1 B2\n");
}

TEST(ScheduleCommand, ExportThenImportSimulatesAsTheGenerator) {
  const auto dir = mpsim::testing::scratch("schedule");
  for (const std::string schedule : {"zb-v", "dualpipev", "interleaved-1f1b --set plan.virtual_stages=2", "zb-h1"}) {
    const std::string sets = " --set plan.schedule=" + schedule;
    const auto csv = dir / "order.csv";
    std::filesystem::remove(csv);
    const CommandResult exported = mpsim::testing::run_mpsim("schedule export" + kInputs + sets + " -o " + csv.string());
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const std::string text = read(csv);
    EXPECT_EQ(text.substr(0, 4), "0F0,") << schedule;
    const CommandResult imported =
        mpsim::testing::run_mpsim("schedule import " + csv.string() + kInputs + sets + " --json");
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    const CommandResult generated = mpsim::testing::run_mpsim("simulate" + kInputs + sets + " --json");
    ASSERT_EQ(generated.exit_code, 0) << generated.err;
    EXPECT_EQ(nlohmann::json::parse(imported.out), nlohmann::json::parse(generated.out)) << schedule;
  }
}

TEST(ScheduleCommand, AnOrderThatCannotRunIsRefusedAtItsCell) {
  const auto csv = mpsim::testing::scratch("schedule") / "stuck.csv";
  std::ofstream(csv) << "0F0,0F1,0F2,0F3,0F4,0F5,0F6,0F7,0B0,0B1,0B2,0B3,0B4,0B5,0B6,0B7\n"
                        "1B0,1F0,1F1,1F2,1F3,1F4,1F5,1F6,1F7,1B1,1B2,1B3,1B4,1B5,1B6,1B7\n";
  const CommandResult run = mpsim::testing::run_mpsim("schedule import " + csv.string() + kInputs);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("stuck.csv:2:1: "), std::string::npos) << run.err;
}

}  // namespace
