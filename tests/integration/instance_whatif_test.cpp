// What-ifs on one node, GPU or link by name (`--set topology.gpus[node5/gpu3].slowdown=1.5`,
// `topology.nodes[5].nics.bandwidth`, `topology.links[...].down`), end to end: the step follows the
// closed form where there is one, and the default (folded) report names the node in trouble.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::repo;
using nlohmann::json;

mpsim::testing::CommandResult mpsim(const std::string& args) { return mpsim::testing::run_mpsim(args); }

/// GPT-3 13B on 8 DGX H100: TP 8 x PP 2 x DP 4 (stage 0 on nodes 0-3, stage 1 on nodes 4-7).
const std::string k13bOn64 = "--topology " + repo("topologies/16x-dgx-h100.yaml") + " --model " +
                             repo("configs/models/gpt3-13b.yaml") + " --plan " +
                             repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " --gpus 64";

json report(const std::string& args) {
  const auto run = mpsim("simulate " + args + " --json");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return json::parse(run.out.empty() ? "{}" : run.out);
}

double step(const json& r) { return r.value("step_time_s", -1.0); }

// One GPU, nothing to communicate: a GPU 1.5x slow takes 1.5x the step (each pass rounds to the ns).
TEST(InstanceWhatIf, ASlowGpuAloneTakesItsFactorLonger) {
  const std::filesystem::path dir = mpsim::testing::scratch("instance-whatif");
  const std::string plan = (dir / "one-gpu.yaml").string();
  std::ofstream(plan) << "parallelism: { tensor: 1, pipeline: 1, data: 1 }\nbatch: { global: 4, micro: 1 }\nschedule: 1f1b\n";
  const std::string args = "--topology " + repo("topologies/dgx-h100.yaml") + " --gpus 1 --model " +
                           repo("configs/models/gpt3-1.3b.yaml") + " --plan " + plan;
  const double base = step(report(args));
  ASSERT_GT(base, 0);
  EXPECT_NEAR(step(report(args + " --set 'topology.gpus[node0/gpu0].slowdown=1.5'")), 1.5 * base, 1e-6 * base);
  EXPECT_NEAR(step(report(args + " --set 'topology.nodes[0].slowdown=3'")), 3 * base, 1e-6 * base);
  std::filesystem::remove_all(dir);
}

// A slow GPU in one replica of a stage holds the whole step (its tensor group in lockstep, the other
// replicas at the gradient sync): folded and unfolded agree, and the folded report names the GPU.
TEST(InstanceWhatIf, TheFoldedReportNamesTheSlowGpu) {
  const std::string what_if = " --set 'topology.gpus[node5/gpu3].slowdown=1.5'";
  const double base = step(report(k13bOn64));
  const double folded = step(report(k13bOn64 + what_if));
  const double unfolded = step(report(k13bOn64 + what_if + " --unfold"));
  EXPECT_GT(folded, base * 1.05);
  EXPECT_NEAR(folded, unfolded, 1e-9 * unfolded);
  const auto text = mpsim("simulate " + k13bOn64 + what_if);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("slowest GPU"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("node5/gpu3 (1.5x slow)"), std::string::npos) << text.out;
  // Without a slowdown the table keeps its first GPU.
  EXPECT_NE(mpsim("simulate " + k13bOn64).out.find("first GPU"), std::string::npos);
}

// node5's NIC ports at 10 Gb/s: the step slows, and the busiest link of the default report is one of
// them, not a link of another replica that the folded flows also keep busy.
TEST(InstanceWhatIf, TheFoldedReportNamesTheSlowNic) {
  const std::string what_if = " --set 'topology.nodes[5].nics.bandwidth=10 Gb/s'";
  EXPECT_GT(step(report(k13bOn64 + what_if)), step(report(k13bOn64)) * 1.1);
  for (const std::string fold : {"", " --unfold"}) {
    const auto text = mpsim("simulate " + k13bOn64 + what_if + fold);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    const auto table = text.out.find("Busiest links:");
    ASSERT_NE(table, std::string::npos) << text.out;
    const auto first_row = text.out.find('\n', text.out.find('\n', table) + 1) + 1;
    EXPECT_EQ(text.out.compare(first_row, 14, "net:node5/nic0"), 0) << fold << "\n" << text.out.substr(table);
  }
}

// A sweep over one GPU's slowdown never gets faster, and a link down reroutes instead of failing.
TEST(InstanceWhatIf, SweepsAndLinksDown) {
  const auto sweep = mpsim("simulate " + k13bOn64 + " --sweep 'topology.gpus[node5/gpu3].slowdown=1,1.1,1.25,2' --json");
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const json rows = json::parse(sweep.out)["runs"];
  ASSERT_EQ(rows.size(), 4U);
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GT(step(rows[i]["report"]), step(rows[i - 1]["report"]));
  const double down = step(report(k13bOn64 + " --set 'topology.links[node5/nvlink:gpu3-nvswitch0].down=true'"));
  EXPECT_GT(down, step(report(k13bOn64)));
  const auto cut = mpsim("simulate " + k13bOn64 + " --set 'topology.links[node5/nvlink:gpu3-nvswitch0].down=true'" +
                         " --set 'topology.links[node5/pcie:gpu3-pcie-switch3].down=true'");
  EXPECT_EQ(cut.exit_code, 2);
  EXPECT_NE(cut.err.find("with this link down node5/gpu3 cannot reach node0/gpu0"), std::string::npos) << cut.err;
}

}  // namespace
