// The mpsim command end to end: exit codes (README.md), the JSON the docs describe, and the main flows.
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::CommandResult;
using mpsim::testing::repo;

CommandResult mpsim(const std::string& args) { return mpsim::testing::run_mpsim(args); }


TEST(Cli, TopoCheckEveryShippedTopology) {
  std::string files;
  for (const auto& entry : std::filesystem::directory_iterator(repo("topologies"))) files += " " + entry.path().string();
  const CommandResult r = mpsim("topo check" + files);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("560 nodes, 4480 GPUs (4480 x a100-80gb)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 node, 8 GPUs (8 x b200)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 node, 72 GPUs (72 x gb200)"), std::string::npos) << r.out;
}

// Every shipped cluster scales with --set topology.nodes=N: N x the GPUs of one node, for 2 nodes and for 33
// (past one full leaf of 32 or 20 ports on the fabric files, so a leaf is partly filled). A one-node file
// names the fabric its nodes join, but builds its switches only with several nodes.
TEST(Cli, TopoShowScalesEveryShippedTopology) {
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(repo("topologies"))) {
    const std::string file = entry.path().string();
    const CommandResult base = mpsim("topo show " + file + " --json");
    ASSERT_EQ(base.exit_code, 0) << file << "\n" << base.err;
    const auto b = nlohmann::json::parse(base.out);
    const int nodes = b["nodes"].get<int>();
    const int per_node = b["gpus"].get<int>() / nodes;
    ASSERT_EQ(per_node * nodes, b["gpus"].get<int>()) << file;
    const auto has_fabric = [](const nlohmann::json& j) {
      return std::any_of(j["devices"].begin(), j["devices"].end(),
                         [](const auto& d) { return d["id"].template get<std::string>().rfind("fabric/", 0) == 0; });
    };
    EXPECT_EQ(has_fabric(b), nodes > 1) << file;
    for (const int n : {2, 33}) {
      const CommandResult r = mpsim("topo show " + file + " --json --set topology.nodes=" + std::to_string(n));
      ASSERT_EQ(r.exit_code, 0) << file << " nodes=" << n << "\n" << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["nodes"].get<int>(), n) << file;
      EXPECT_EQ(j["gpus"].get<int>(), n * per_node) << file;
      EXPECT_TRUE(has_fabric(j)) << file;
      // GPU 0 of node 0 and of node 1 meet over the network.
      EXPECT_EQ(j["gpu_matrix"]["path_class"][0][per_node], "NET") << file;
    }
    ++checked;
  }
  EXPECT_GE(checked, 12);
  const CommandResult other = mpsim("topo show " + repo("topologies/dgx-h100.yaml") + " --set plan.tensor=2");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("mpsim: error: --set plan.tensor=2: topo commands override topology fields only"),
            std::string::npos) << other.err;
}

// GB200 NVL72: one NVLink domain of 72 GPUs at 900 GB/s per direction (18 x 50 GB/s), racks joined by
// 400 Gb/s NICs, one per GPU.
TEST(Cli, Gb200Nvl72IsOneNvlinkDomain) {
  const std::string file = repo("topologies/gb200-nvl72.yaml");
  const CommandResult r = mpsim("topo route " + file + " node0/gpu0 node0/gpu71 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["path_class"], "NVL");
  EXPECT_DOUBLE_EQ(j["bandwidth_bytes_per_s"].get<double>(), 18 * 50e9);
  const CommandResult racks = mpsim("topo route " + file + " node0/gpu5 node1/gpu5 --json --set topology.nodes=2");
  ASSERT_EQ(racks.exit_code, 0) << racks.err;
  const auto k = nlohmann::json::parse(racks.out);
  EXPECT_EQ(k["path_class"], "NET");
  EXPECT_DOUBLE_EQ(k["bandwidth_bytes_per_s"].get<double>(), 400e9 / 8);
}

TEST(Cli, TopoRouteJsonContract) {
  const CommandResult r = mpsim("topo route " + repo("topologies/4x-p4d.yaml") + " node0/gpu0 node1/gpu0 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["src"], "node0/gpu0");
  EXPECT_EQ(j["dst"], "node1/gpu0");
  EXPECT_DOUBLE_EQ(j["bandwidth_bytes_per_s"].get<double>(), 12.5e9);  // one 100 Gb/s EFA NIC
  EXPECT_DOUBLE_EQ(j["latency_s"].get<double>(), 1e-6);               // two 0.5 us EFA ports
  EXPECT_EQ(j["path_class"], "NET");
  EXPECT_EQ(j["hops"].front(), "node0/gpu0");
  EXPECT_EQ(j["hops"].back(), "node1/gpu0");
  EXPECT_EQ(j["hops"][2], "node0/nic0");
}

TEST(Cli, TopoRouteUnknownDeviceIsBadInput) {
  const CommandResult r = mpsim("topo route " + repo("topologies/dgx-a100.yaml") + " node0/gpu0 node0/gpu9");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no device named 'node0/gpu9'"), std::string::npos) << r.err;
}

TEST(Cli, TopoShowJsonHasMatrix) {
  const CommandResult r = mpsim("topo show " + repo("topologies/dgx-h100.yaml") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["gpu_matrix"]["gpus"].size(), 8u);
  EXPECT_EQ(j["gpu_matrix"]["path_class"][0][5], "NVL");
  EXPECT_DOUBLE_EQ(j["gpu_matrix"]["bandwidth_bytes_per_s"][0][5].get<double>(), 450e9);
}

TEST(Cli, ModelShowJsonContract) {
  const CommandResult r = mpsim("model show " + repo("configs/models/gpt3-175b.yaml") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // SC21 Eq. 2 for l=96, h=12288, V=51200, s=2048 (+2h for the final norm): 174,615,846,912.
  EXPECT_EQ(j["parameters"].get<std::int64_t>(), 174'615'846'912LL);
  // Megatron: 72 l s h^2 (1 + s/(6h) + V/(12 h l)) per sample, no recomputation.
  const double l = 96, s = 2048, h = 12288, v = 51200;
  const double flops = 72 * l * s * h * h * (1 + s / (6 * h) + v / (12 * h * l));
  EXPECT_NEAR(j["training_flops_per_sample"].get<double>() / flops, 1.0, 1e-9);
  ASSERT_EQ(j["layers"].size(), 98u);  // embedding + 96 blocks + output head
  for (const char* key : {"name", "parameters", "forward_flops", "backward_flops", "activation_bytes", "output_bytes"}) {
    EXPECT_TRUE(j["layers"][1].contains(key)) << key;
  }
}

TEST(Cli, PlanCheckShippedPlan) {
  const CommandResult r = mpsim("plan check " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " --topology " +
                      repo("topologies/4x-p4d.yaml") + " --model " + repo("configs/models/gpt3-13b.yaml") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // The completed plan in the plan file's schema.
  EXPECT_EQ(j["parallelism"]["tensor"], 8);
  EXPECT_EQ(j["parallelism"]["pipeline"], 2);
  EXPECT_EQ(j["parallelism"]["data"], 2);
  EXPECT_EQ(j["batch"]["microbatches"], 128);
  EXPECT_EQ(j["schedule"], "1f1b");
}

TEST(Cli, ImportWritesATopologyThatLoads) {
  const auto out = std::filesystem::temp_directory_path() / ("mpsim-import-" + std::to_string(::getpid()) + ".yaml");
  const CommandResult r = mpsim("topo import " + repo("tests/data/import/dgx-a100.topo.txt") + " --gpu a100-80gb -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CommandResult route = mpsim("topo route " + out.string() + " node0/gpu0 node0/gpu5 --json");
  ASSERT_EQ(route.exit_code, 0) << route.err;
  const auto j = nlohmann::json::parse(route.out);
  EXPECT_EQ(j["path_class"], "NVL");
  EXPECT_DOUBLE_EQ(j["bandwidth_bytes_per_s"].get<double>(), 300e9);
  std::filesystem::remove(out);
}

TEST(Cli, ImportWithoutGpuKindIsBadInput) {
  const CommandResult r = mpsim("topo import " + repo("tests/data/import/dgx-a100.topo.txt") + " -o -");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, BadFlagsAreBadInput) {
  EXPECT_EQ(mpsim("topo show").exit_code, 2);
  EXPECT_EQ(mpsim("nonsense").exit_code, 2);
  EXPECT_EQ(mpsim("topo show /no/such/file.yaml").exit_code, 2);
  EXPECT_EQ(mpsim("--help").exit_code, 0);
}

TEST(Cli, VersionNamesTheProject) {
  const CommandResult r = mpsim("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("mpsim ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find('.'), std::string::npos) << r.out;
}

/// The command lines of a help text's examples: lines starting "  mpsim ", with their "\" continuations.
std::vector<std::string> example_commands(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream lines(help);
  std::string line;
  bool continued = false;
  while (std::getline(lines, line)) {
    const bool starts = line.rfind("  mpsim ", 0) == 0;
    if (!starts && !continued) continue;
    std::string text = starts ? line.substr(std::string("  mpsim ").size()) : line;
    continued = !text.empty() && text.back() == '\\';
    if (continued) text.pop_back();
    if (starts) {
      out.push_back(text);
    } else {
      out.back() += " " + text;
    }
  }
  return out;
}

// Every example `mpsim --help` shows runs as written from the repository root.
TEST(Cli, HelpExamplesRun) {
  const CommandResult help = mpsim("--help");
  ASSERT_EQ(help.exit_code, 0);
  const std::vector<std::string> examples = example_commands(help.out);
  EXPECT_GE(examples.size(), 5u) << help.out;
  for (const std::string& example : examples) {
    const CommandResult run = mpsim::testing::run_mpsim(example, repo(""));
    EXPECT_EQ(run.exit_code, 0) << "mpsim " << example << "\n" << run.err;
  }
}

// A topology name that counts its nodes follows --set topology.nodes.
TEST(Cli, NodeCountInTheNameFollowsTheOverride) {
  const CommandResult run = mpsim("simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                                  repo("configs/models/gpt3-175b.yaml") + " --plan " +
                                  repo("configs/plans/gpt3-175b-h100-weak-scaling.yaml") + " --set topology.nodes=128");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("on 128x DGX H100:"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("512x"), std::string::npos) << run.out;
}

// A plan written for a smaller job says how to run it on the large cluster, and both ways work.
TEST(Cli, SmallPlanOnALargeClusterSuggestsTheFix) {
  const std::string inputs = " --topology " + repo("topologies/selene.yaml") + " --model " +
                             repo("configs/models/gpt3-13b.yaml") + " --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml");
  const CommandResult refused = mpsim("simulate" + inputs);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("32 GPUs, but the cluster has 4480; to run it on 32 GPUs of this cluster: --gpus 32, or a "
                             "cluster of 4 nodes: --set topology.nodes=4 (field 'data')"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(mpsim("simulate" + inputs + " --gpus 32").exit_code, 0);
  EXPECT_EQ(mpsim("simulate" + inputs + " --set topology.nodes=4").exit_code, 0);
}

// --optimize cost: the fastest plan of each job size (1, 2 and 4 p4d nodes), its --tokens run, and the
// size with the fewest GPU-hours among those that end by --deadline.
TEST(Cli, PlanOptimizeCostPicksTheFewestGpuHoursWithinTheDeadline) {
  const auto run = [](const std::string& extra) {
    const CommandResult r = mpsim("plan --tokens 20B --optimize cost --json" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out);
  };
  const auto cheapest = [](const nlohmann::json& sizes, double deadline_s) {
    int gpus = -1;
    double best = 1e300;
    for (const auto& s : sizes) {
      const auto& t = s["best"]["training"];
      if (t["wall_time_s"].get<double>() <= deadline_s && t["gpu_hours"].get<double>() < best) {
        best = t["gpu_hours"].get<double>();
        gpus = s["gpus"].get<int>();
      }
    }
    return gpus;
  };
  const nlohmann::json any = run("");
  ASSERT_EQ(any["job_sizes"].size(), 3u);
  EXPECT_EQ(any["job_sizes"][0]["gpus"], 8);
  EXPECT_EQ(any["job_sizes"][2]["gpus"], 32);
  EXPECT_EQ(any["chosen_gpus"].get<int>(), cheapest(any["job_sizes"], 1e300));
  // Each size's plan carries its bands, as simulate's report does.
  for (const auto& s : any["job_sizes"]) {
    const auto& best = s["best"];
    ASSERT_TRUE(best.contains("step_time_band_s")) << s;
    EXPECT_LE(best["step_time_band_s"][0].get<double>(), best["step_time_s"].get<double>());
    EXPECT_GE(best["step_time_band_s"][1].get<double>(), best["step_time_s"].get<double>());
    EXPECT_LE(best["peak_memory_band_bytes"][0].get<double>(), best["peak_memory_bytes"].get<double>());
    EXPECT_GE(best["peak_memory_band_bytes"][1].get<double>(), best["peak_memory_bytes"].get<double>());
  }
  // A deadline between the largest size's run and the others': only the largest is in time.
  const double fastest = any["job_sizes"][2]["best"]["training"]["wall_time_s"].get<double>();
  const nlohmann::json tight = run(" --deadline " + std::to_string(fastest / 3600 * 1.01) + "h");
  EXPECT_EQ(tight["chosen_gpus"].get<int>(), cheapest(tight["job_sizes"], fastest * 1.01));
  EXPECT_EQ(tight["chosen_gpus"].get<int>(), 32);

  const CommandResult late = mpsim("plan --tokens 20B --optimize cost --deadline 1d");
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_NE(late.err.find("--deadline 1d: no job size finishes the run in time"), std::string::npos) << late.err;
  const CommandResult no_tokens = mpsim("plan --optimize cost");
  EXPECT_EQ(no_tokens.exit_code, 2);
  EXPECT_NE(no_tokens.err.find("--optimize cost: cost is the GPU-hours of a run: give its length with --tokens"),
            std::string::npos)
      << no_tokens.err;
}

}  // namespace
