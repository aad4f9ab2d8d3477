// Each GPU kind of a mixed cluster alone: its search equals the search of a cluster built of its nodes
// alone; where the mix wins it is named faster by the ratio of the two steps; where the link between the
// kinds is slow, the kind alone wins and the reason is the mix's exposed communication.
#include "planner/kind_alone.h"

#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "tests/support/two_kind_topology.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::cluster_yaml;
using testing::shipped_model;

/// mpsim::testing::two_kind_topology_yaml as a cluster.
topology::Cluster two_kinds(int fast, int slow, const std::string& slow_nic = "200 Gb/s") {
  return cluster_yaml(mpsim::testing::two_kind_topology_yaml(fast, slow, slow_nic));
}

PlannerOptions kind_search_options() {
  PlannerOptions options;
  options.space.global_batch = 16;
  options.top = 1;
  return options;
}

TEST(KindAlone, OneKindHasNoAlternative) { EXPECT_TRUE(kinds_alone(two_kinds(2, 0)).empty()); }

TEST(KindAlone, EachKindsSearchIsTheSearchOfItsNodesAloneAndTheMixWinsHere) {
  const model::Model model = shipped_model("gpt3-1.3b");
  const topology::Cluster mixed = two_kinds(1, 1);
  const PlannerResult mix = run_planner(mixed, model, kind_search_options());
  ASSERT_FALSE(mix.ranked.empty()) << mix.infeasible;
  const std::vector<KindAlone> kinds = kinds_alone(mixed);
  ASSERT_EQ(kinds.size(), 2U);
  EXPECT_EQ(kinds[0].id, "h100-sxm");
  EXPECT_EQ(kinds[1].id, "a100-80gb");
  for (const KindAlone& k : kinds) {
    SCOPED_TRACE(k.id);
    EXPECT_EQ(k.cluster.gpus().size(), 4U);
    const PlannerResult alone = run_planner(k.cluster, model, kind_search_options());
    // The node built alone (a one-node cluster has no fabric; the search does not use it either).
    const PlannerResult built = run_planner(k.id == "h100-sxm" ? two_kinds(1, 0) : two_kinds(0, 1), model, kind_search_options());
    ASSERT_FALSE(alone.ranked.empty());
    ASSERT_FALSE(built.ranked.empty());
    EXPECT_EQ(alone.ranked.front().plan, built.ranked.front().plan);
    EXPECT_EQ(alone.ranked.front().report.step_time_s, built.ranked.front().report.step_time_s);

    const AgainstMix a = against_mix(mixed, mix.ranked.front(), k, alone.ranked.front(), model);
    const double alone_s = alone.ranked.front().report.step_time_s;
    const double mix_s = mix.ranked.front().report.step_time_s;
    EXPECT_FALSE(a.alone_faster) << alone_s << " vs " << mix_s;
    EXPECT_DOUBLE_EQ(a.mix_speedup, alone_s / mix_s);
    EXPECT_GE(a.mix_speedup, 1.0);
    EXPECT_TRUE(a.why.empty());
    // The breakdowns: the mix's is the winner's, each adds up to its step.
    EXPECT_DOUBLE_EQ(a.comparison.winner.step_s, mix_s);
    EXPECT_DOUBLE_EQ(a.comparison.other.step_s, alone_s);
    EXPECT_NEAR(a.comparison.winner.compute_s + a.comparison.winner.bubble_s + a.comparison.winner.exposed_communication_s,
                mix_s, 1e-9);
    EXPECT_FALSE(a.mix_busiest_kind.empty());
  }
}

TEST(KindAlone, ASlowLinkBetweenTheKindsLetsTheFasterKindAloneWin) {
  // The A100 nodes' NICs at 1 Gb/s: every plan of the mix sends each microbatch's activations between
  // the kinds at 1 Gb/s; the H100 nodes alone never touch those NICs.
  const model::Model model = shipped_model("gpt3-1.3b");
  const topology::Cluster mixed = two_kinds(2, 2, "1 Gb/s");
  const PlannerResult mix = run_planner(mixed, model, kind_search_options());
  ASSERT_FALSE(mix.ranked.empty()) << mix.infeasible;
  const std::vector<KindAlone> kinds = kinds_alone(mixed);
  ASSERT_EQ(kinds.size(), 2U);
  const KindAlone& h100 = kinds.front();
  const PlannerResult alone = run_planner(h100.cluster, model, kind_search_options());
  ASSERT_FALSE(alone.ranked.empty());
  const AgainstMix a = against_mix(mixed, mix.ranked.front(), h100, alone.ranked.front(), model);
  ASSERT_TRUE(a.alone_faster) << alone.ranked.front().report.step_time_s << " vs " << mix.ranked.front().report.step_time_s;
  EXPECT_LT(a.mix_speedup, 1.0);
  // The winner is the kind alone; the mix's busiest rank waits on the slow link.
  EXPECT_DOUBLE_EQ(a.comparison.winner.step_s, alone.ranked.front().report.step_time_s);
  EXPECT_EQ(a.comparison.main_reason.rfind("exposed communication +", 0), 0U) << a.comparison.main_reason;
  EXPECT_GT(a.comparison.other.exposed_communication_s, a.comparison.winner.exposed_communication_s);
  EXPECT_NE(a.why.find("the NVIDIA A100 SXM4 80GB nodes slow the job down"), std::string::npos) << a.why;
  EXPECT_NE(a.why.find("the mix loses on " + a.comparison.main_reason), std::string::npos) << a.why;
  EXPECT_NE(a.why.find(a.mix_busiest_kind), std::string::npos) << a.why;
  // The routes: 1 Gb/s between the kinds (the A100 NIC), 200 Gb/s between two H100 nodes (their NICs).
  EXPECT_NE(a.why.find(fmt::format("a route between the kinds (node0/gpu0 to node2/gpu0) runs at {}, between two of "
                                   "its nodes at {}",
                                   to_string(BytesPerSec::gigabits_per_sec(1)), to_string(BytesPerSec::gigabits_per_sec(200)))),
            std::string::npos)
      << a.why;
}

}  // namespace
}  // namespace mpsim::planner
