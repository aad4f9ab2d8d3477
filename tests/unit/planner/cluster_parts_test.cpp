// Parts of a mixed cluster: the base kind's nodes with the first n of the others', n = 1 .. m - 1 (or a few
// spread evenly); each part's search equals the search of a topology of those nodes alone.
#include "planner/cluster_parts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/search.h"
#include "tests/support/two_kind_topology.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::cluster_yaml;
using testing::shipped_model;

topology::Cluster parted_cluster(int fast, int slow) {
  return cluster_yaml(mpsim::testing::two_kind_topology_yaml(fast, slow, "200 Gb/s"));
}

int part_kind_index(const topology::Cluster& c, const std::string& id) {
  for (std::size_t i = 0; i < c.gpu_kinds().size(); ++i) {
    if (c.gpu_kinds()[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> added_counts_of(const std::vector<ClusterPart>& parts) {
  std::vector<int> out;
  for (const ClusterPart& p : parts) out.push_back(p.added_nodes);
  return out;
}

TEST(ClusterParts, TheBaseKindsNodesWithTheFirstNOfTheOthers) {
  const topology::Cluster mixed = parted_cluster(2, 3);  // nodes 0-1 H100, 2-4 A100, 4 GPUs each
  const std::vector<ClusterPart> parts = cluster_parts(mixed, part_kind_index(mixed, "h100-sxm"), 8);
  ASSERT_EQ(added_counts_of(parts), (std::vector<int>{1, 2}));
  EXPECT_EQ(parts[0].nodes, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parts[1].nodes, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parts[0].cluster.gpus().size(), 12U);
  EXPECT_EQ(parts[1].cluster.gpus().size(), 16U);
  EXPECT_EQ(parts[0].label, "8 NVIDIA H100 SXM 80GB + 4 NVIDIA A100 SXM4 80GB");
  // From the A100's side: its three nodes with one H100 node (of two).
  const std::vector<ClusterPart> from_a100 = cluster_parts(mixed, part_kind_index(mixed, "a100-80gb"), 8);
  ASSERT_EQ(added_counts_of(from_a100), (std::vector<int>{1}));
  EXPECT_EQ(from_a100[0].nodes, (std::vector<int>{0, 2, 3, 4}));
  EXPECT_EQ(from_a100[0].label, "4 NVIDIA H100 SXM 80GB + 12 NVIDIA A100 SXM4 80GB");
}

TEST(ClusterParts, AtMostMostSpreadEvenlyAndNoneWithoutAPart) {
  const topology::Cluster mixed = parted_cluster(1, 9);  // 9 A100 nodes: n = 1 .. 8
  const int h100 = part_kind_index(mixed, "h100-sxm");
  EXPECT_EQ(added_counts_of(cluster_parts(mixed, h100, 8)), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  // 3 of 8: round(i x 9 / 4) for i = 1, 2, 3.
  EXPECT_EQ(added_counts_of(cluster_parts(mixed, h100, 3)), (std::vector<int>{2, 5, 7}));
  EXPECT_EQ(added_counts_of(cluster_parts(mixed, h100, 1)), (std::vector<int>{5}));  // round(4.5) = 5
  EXPECT_TRUE(cluster_parts(mixed, h100, 0).empty());
  // One other node: the base kind alone and the whole cluster are all there is.
  const topology::Cluster two = parted_cluster(2, 1);
  EXPECT_TRUE(cluster_parts(two, part_kind_index(two, "h100-sxm"), 3).empty());
  // One kind: nothing to part.
  const topology::Cluster one = parted_cluster(3, 0);
  EXPECT_TRUE(cluster_parts(one, 0, 3).empty());
}

TEST(ClusterParts, APartsSearchIsTheSearchOfItsNodesAlone) {
  const model::Model model = shipped_model("gpt3-1.3b");
  PlannerOptions options;
  options.space.global_batch = 16;
  options.top = 1;
  const topology::Cluster mixed = parted_cluster(1, 2);
  const std::vector<ClusterPart> parts = cluster_parts(mixed, part_kind_index(mixed, "h100-sxm"), 3);
  ASSERT_EQ(parts.size(), 1U);
  const PlannerResult part = run_planner(parts[0].cluster, model, options);
  const PlannerResult alone = run_planner(parted_cluster(1, 1), model, options);
  ASSERT_FALSE(part.ranked.empty()) << part.infeasible;
  ASSERT_FALSE(alone.ranked.empty()) << alone.infeasible;
  EXPECT_EQ(part.ranked.front().report.step_time_s, alone.ranked.front().report.step_time_s);
  EXPECT_EQ(part.ranked.front().report.peak_memory_bytes, alone.ranked.front().report.peak_memory_bytes);
}

}  // namespace
}  // namespace mpsim::planner
