// `mpsim plan` on a cluster of two GPU kinds also plans on each kind's nodes alone: each alternative's
// best is what `plan` gives on a topology of those nodes alone; the faster is named; a slow link between
// the kinds makes the faster kind alone win, with a warning that says why; a kind with no plan says why;
// --no-single-kind leaves it out. The fastest kind's nodes with some of the other kind's (parts of the
// cluster) are searched too, each part's best what `plan` gives on a topology of those nodes alone, and a
// part faster than the mix and every kind alone is the one `fastest` names.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"
#include "tests/support/two_kind_topology.h"

namespace {

using mpsim::testing::CommandResult;
using mpsim::testing::repo;
using mpsim::testing::run_mpsim;

/// testing::two_kind_topology_yaml, named `name`, written to the scratch folder.
std::string two_kinds_file(const std::string& name, int fast, int slow, const std::string& slow_nic = "200 Gb/s") {
  const std::filesystem::path path = mpsim::testing::scratch("plan-kinds") / name;
  std::ofstream(path) << fmt::format("name: {}\n", name) << mpsim::testing::two_kind_topology_yaml(fast, slow, slow_nic);
  return path.string();
}

/// gpt3-1.3b at global batch 16 on `topology`, the best plan only, ranked by step time alone (as each kind
/// alone is searched: the comparison is of speed).
std::string plan_args(const std::string& topology) {
  return "plan --topology " + topology + " --model " + repo("configs/models/gpt3-1.3b.yaml") +
         " --global-batch 16 --top 1 --pareto simulated --rank-tolerance 0";
}

nlohmann::json json_of(const std::string& args, int expected_exit = 0) {
  const CommandResult r = run_mpsim(args + " --json");
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(PlanKindsAlone, EachKindsBestIsPlanOnItsNodesAloneAndTheFasterIsNamed) {
  const nlohmann::json mix = json_of(plan_args(two_kinds_file("mix.yaml", 2, 2)));
  ASSERT_TRUE(mix.contains("single_kind_alternatives"));
  const auto& alternatives = mix["single_kind_alternatives"];
  ASSERT_EQ(alternatives.size(), 2U);
  const double mix_s = mix["best"]["step_time_s"].get<double>();
  double fastest_s = mix_s;
  std::string fastest = "mix";
  for (const auto& a : alternatives) {
    const std::string kind = a["kind"];
    SCOPED_TRACE(kind);
    const nlohmann::json alone = json_of(plan_args(two_kinds_file(kind + ".yaml", kind == "h100-sxm" ? 2 : 0,
                                                                  kind == "h100-sxm" ? 0 : 2)));
    EXPECT_FALSE(alone.contains("single_kind_alternatives"));  // one kind: nothing to compare
    EXPECT_EQ(a["gpus"], 8);
    EXPECT_EQ(a["nodes"], 2);
    EXPECT_EQ(a["fits"], true);
    EXPECT_EQ(a["best_step_time_s"].get<double>(), alone["best"]["step_time_s"].get<double>());
    EXPECT_EQ(a["plan"], alone["best"]["plan"]);
    EXPECT_EQ(a["peak_memory_bytes"], alone["best"]["peak_memory_bytes"]);
    const double alone_s = a["best_step_time_s"].get<double>();
    EXPECT_EQ(a["mix_best_step_time_s"].get<double>(), mix_s);
    EXPECT_DOUBLE_EQ(a["mix_speedup"].get<double>(), alone_s / mix_s);
    EXPECT_EQ(a["faster"], alone_s < mix_s ? "alone" : "mix");
    EXPECT_EQ(a["why"].is_null(), alone_s >= mix_s);
    if (alone_s < fastest_s) {
      fastest_s = alone_s;
      fastest = kind;
    }
  }
  EXPECT_EQ(mix["fastest"], fastest);
  // Here the mix is the faster (both kinds' GPUs at work, 200 Gb/s between them).
  EXPECT_EQ(fastest, "mix");

  const CommandResult text = run_mpsim(plan_args(two_kinds_file("mix.yaml", 2, 2)));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Each GPU kind alone"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("NVIDIA H100 SXM 80GB alone (8 GPUs): best "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(": the mix is "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("Warning: the 8"), std::string::npos) << text.out;
}

TEST(PlanKindsAlone, ASlowLinkBetweenTheKindsIsAWarningThatNamesTheFasterKind) {
  const std::string topology = two_kinds_file("slow-link.yaml", 2, 2, "1 Gb/s");
  const nlohmann::json mix = json_of(plan_args(topology));
  EXPECT_EQ(mix["fastest"], "h100-sxm");
  const auto& h100 = mix["single_kind_alternatives"][0];
  EXPECT_EQ(h100["kind"], "h100-sxm");
  EXPECT_EQ(h100["faster"], "alone");
  EXPECT_LT(h100["mix_speedup"].get<double>(), 1.0);
  EXPECT_LT(h100["best_step_time_s"].get<double>(), mix["best"]["step_time_s"].get<double>());
  const std::string why = h100["why"];
  EXPECT_NE(why.find("the NVIDIA A100 SXM4 80GB nodes slow the job down"), std::string::npos) << why;
  EXPECT_NE(why.find("the mix loses on " + h100["main_reason"].get<std::string>()), std::string::npos) << why;

  const CommandResult text = run_mpsim(plan_args(topology));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Warning: the 8 NVIDIA H100 SXM 80GB alone are faster than the mix: "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(why), std::string::npos) << text.out;
}

TEST(PlanKindsAlone, EachPartsBestIsPlanOnItsNodesAlone) {
  // Two nodes of each kind: the fastest kind alone's two nodes with one of the other kind's.
  for (const std::string nic : {"200 Gb/s", "1 Gb/s"}) {
    SCOPED_TRACE(nic);
    const nlohmann::json mix = json_of(plan_args(two_kinds_file("parts.yaml", 2, 2, nic)));
    std::string fastest_kind;
    double fastest_s = 0;
    for (const auto& a : mix["single_kind_alternatives"]) {
      if (fastest_kind.empty() || a["best_step_time_s"].get<double>() < fastest_s) {
        fastest_kind = a["kind"];
        fastest_s = a["best_step_time_s"].get<double>();
      }
    }
    ASSERT_EQ(mix["cluster_part_alternatives"].size(), 1U);
    const auto& part = mix["cluster_part_alternatives"][0];
    const bool h100_base = fastest_kind == "h100-sxm";
    EXPECT_EQ(part["gpus"], 12);
    EXPECT_EQ(part["nodes"], 3);
    EXPECT_EQ(part["added_nodes"], 1);
    const std::vector<int> nodes = h100_base ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 2, 3};
    EXPECT_EQ(part["cluster_nodes"].get<std::vector<int>>(), nodes);
    EXPECT_EQ(part["label"], h100_base ? "8 NVIDIA H100 SXM 80GB + 4 NVIDIA A100 SXM4 80GB"
                                       : "4 NVIDIA H100 SXM 80GB + 8 NVIDIA A100 SXM4 80GB");
    const nlohmann::json alone =
        json_of(plan_args(two_kinds_file("part-alone.yaml", h100_base ? 2 : 1, h100_base ? 1 : 2, nic)));
    ASSERT_EQ(part["fits"], true) << part;
    EXPECT_EQ(part["best_step_time_s"].get<double>(), alone["best"]["step_time_s"].get<double>());
    EXPECT_EQ(part["plan"], alone["best"]["plan"]);
    const double part_s = part["best_step_time_s"].get<double>();
    const double mix_s = mix["best"]["step_time_s"].get<double>();
    EXPECT_EQ(part["faster"], part_s < mix_s ? "part" : "mix");
    EXPECT_DOUBLE_EQ(part["mix_speedup"].get<double>(), part_s / mix_s);
    // `fastest`: the mix, a kind or the part, whichever is strictly faster than those before it.
    std::string fastest = "mix";
    double best_s = mix_s;
    if (fastest_s < best_s) {
      fastest = fastest_kind;
      best_s = fastest_s;
    }
    if (part_s < best_s) fastest = part["label"];
    EXPECT_EQ(mix["fastest"], fastest);

    const CommandResult text = run_mpsim(plan_args(two_kinds_file("parts.yaml", 2, 2, nic)));
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("Parts of the cluster"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find(part["label"].get<std::string>() + " (12 GPUs, 3 nodes): best "), std::string::npos)
        << text.out;
    EXPECT_EQ(text.out.find("Warning: 12 of the cluster's GPUs") != std::string::npos, part_s < mix_s) << text.out;
  }
}

TEST(PlanKindsAlone, APartFasterThanTheMixAndEveryKindIsTheFastest) {
  // 10 Gb/s NICs on the A100 nodes: the whole mix's traffic to the second A100 node costs more than its
  // GPUs add, and the two H100 nodes with one A100 node beat both the mix and the H100 nodes alone.
  const nlohmann::json mix = json_of(plan_args(two_kinds_file("parts-10g.yaml", 2, 2, "10 Gb/s")));
  ASSERT_EQ(mix["cluster_part_alternatives"].size(), 1U);
  const auto& part = mix["cluster_part_alternatives"][0];
  ASSERT_EQ(part["fits"], true) << part;
  const double part_s = part["best_step_time_s"].get<double>();
  EXPECT_LT(part_s, mix["best"]["step_time_s"].get<double>());
  for (const auto& a : mix["single_kind_alternatives"]) {
    ASSERT_EQ(a["fits"], true) << a;
    EXPECT_LT(part_s, a["best_step_time_s"].get<double>()) << a["kind"];
  }
  EXPECT_EQ(part["faster"], "part");
  EXPECT_EQ(mix["fastest"], part["label"]);
  EXPECT_EQ(mix["fastest"], "8 NVIDIA H100 SXM 80GB + 4 NVIDIA A100 SXM4 80GB");
}

TEST(PlanKindsAlone, AKindWithNoPlanSaysWhyAndNoSingleKindLeavesItOut) {
  // One stage (tensor 1, pipeline 1) of data 8 per kind: 8 does not divide a global batch of 6, and the
  // mix's one stage would span both kinds.
  const std::string topology = two_kinds_file("mix.yaml", 2, 2);
  const std::string args = "plan --topology " + topology + " --model " + repo("configs/models/gpt3-1.3b.yaml") +
                           " --global-batch 6 --tensor 1 --pipeline 1";
  const nlohmann::json none = json_of(args, 1);
  ASSERT_EQ(none["single_kind_alternatives"].size(), 2U);
  for (const auto& a : none["single_kind_alternatives"]) {
    EXPECT_EQ(a["fits"], false);
    EXPECT_TRUE(a["best_step_time_s"].is_null());
    EXPECT_NE(a["error"].get<std::string>().find("no candidate plan for 8 GPUs and this global batch"), std::string::npos)
        << a["error"];
  }
  EXPECT_TRUE(none["fastest"].is_null());
  const CommandResult text = run_mpsim(args);
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_NE(text.out.find("NVIDIA A100 SXM4 80GB alone (8 GPUs): no plan: no candidate plan for 8 GPUs"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.err.find("mpsim: error: no feasible plan"), std::string::npos) << text.err;

  const nlohmann::json off = json_of(plan_args(topology) + " --no-single-kind");
  EXPECT_FALSE(off.contains("single_kind_alternatives"));
  EXPECT_FALSE(off.contains("fastest"));
  EXPECT_FALSE(off.contains("cluster_part_alternatives"));
  const CommandResult off_text = run_mpsim(plan_args(topology) + " --no-single-kind");
  EXPECT_EQ(off_text.out.find("Each GPU kind alone"), std::string::npos) << off_text.out;
  EXPECT_EQ(off_text.out.find("Parts of the cluster"), std::string::npos) << off_text.out;
}

}  // namespace
