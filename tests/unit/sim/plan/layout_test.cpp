// The layout against Megatron-Core's RankGenerator, with the groups worked out by hand from its rule:
// rank = sum of coordinate x stride, strides in order-string order (fastest first), a group varies the
// named axes with the first of them fastest.
#include "sim/plan/layout.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <utility>

namespace mpsim::plan {
namespace {

using Groups = std::vector<std::vector<int>>;

const Placement kTpCpEpDpPp{Axis::Tensor, Axis::Context, Axis::Expert, Axis::Data, Axis::Pipeline};

/// Degrees with the given axes set, the others 1.
Degrees degrees_with(std::initializer_list<std::pair<Axis, int>> sizes) {
  Degrees d;
  for (const auto& [axis, size] : sizes) d.set(axis, size);
  return d;
}

TEST(Layout, FoldingExampleAttentionContextEightExpertsEight) {
  // 8 GPUs: attention tp1 cp8, experts ep8 (etp1, so expert_data 1).
  Degrees d;
  d.set(Axis::Context, 8);
  d.set(Axis::Expert, 8);
  d.set(Axis::ExpertTensor, 1);
  ASSERT_FALSE(degrees_error(d));
  const Layout layout(d, kTpCpEpDpPp);
  EXPECT_EQ(layout.ranks(), 8);
  EXPECT_EQ(layout.size(Axis::ExpertData), 1);
  EXPECT_EQ(layout.groups(Axis::Context), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(layout.groups(Axis::Expert), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(layout.groups(Axis::Tensor), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(layout.groups(Axis::Data), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(layout.groups(Axis::ExpertData), (Groups{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}));
  EXPECT_EQ(layout.group(5, Axis::Data | Axis::Context), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(layout.coordinate(r, Axis::Context), r);
    EXPECT_EQ(layout.coordinate(r, Axis::Expert), r);
  }
}

TEST(Layout, Tp2Cp2Dp2Pp2WithExpertsFolded) {
  // 16 GPUs, order tp-cp-ep-dp-pp: dense strides tp 1, cp 2, dp 4, pp 8.
  Degrees d;
  d.set(Axis::Tensor, 2);
  d.set(Axis::Context, 2);
  d.set(Axis::Data, 2);
  d.set(Axis::Pipeline, 2);
  d.set(Axis::Expert, 2);
  d.set(Axis::ExpertTensor, 1);  // expert_data = 2*2*2 / (1*2) = 4; expert strides etp 1, ep 1, edp 2, pp 8
  ASSERT_FALSE(degrees_error(d));
  const Layout layout(d, kTpCpEpDpPp);
  EXPECT_EQ(layout.ranks(), 16);
  EXPECT_EQ(layout.size(Axis::ExpertData), 4);
  EXPECT_EQ(layout.groups(Axis::Tensor), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(layout.groups(Axis::Context), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}}));
  EXPECT_EQ(layout.groups(Axis::Data), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}}));
  EXPECT_EQ(layout.groups(Axis::Pipeline), (Groups{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}}));
  // Megatron reduces dense gradients over dp-cp.
  EXPECT_EQ(layout.groups(Axis::Data | Axis::Context), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(layout.groups(Axis::Tensor | Axis::Context), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}));
  // The expert generator on the same ranks.
  EXPECT_EQ(layout.groups(Axis::Expert), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
  EXPECT_EQ(layout.groups(Axis::ExpertData), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(layout.groups(Axis::ExpertTensor).size(), 16u);
  EXPECT_EQ(layout.group(11, Axis::Expert), (std::vector<int>{10, 11}));
  // Coordinates and moves along an axis.
  EXPECT_EQ(layout.coordinate(13, Axis::Tensor), 1);
  EXPECT_EQ(layout.coordinate(13, Axis::Context), 0);
  EXPECT_EQ(layout.coordinate(13, Axis::Data), 1);
  EXPECT_EQ(layout.coordinate(13, Axis::Pipeline), 1);
  EXPECT_EQ(layout.coordinate(13, Axis::ExpertData), 2);
  EXPECT_EQ(layout.with(13, Axis::Pipeline, 0), 5);
  EXPECT_EQ(layout.with(5, Axis::Context, 1), 7);
  // Mixing the two generators is a bug.
  EXPECT_THROW((void)layout.group(0, Axis::Expert | Axis::Context), std::logic_error);
}

TEST(Layout, HybridShardingSplitsTheDataAxis) {
  // 16 GPUs, tp2 dp8 in two shard groups: dp strides 2, its inner part (4 ranks) stride 2, its outer
  // part (2 groups) stride 8.
  Degrees d;
  d.set(Axis::Tensor, 2);
  d.set(Axis::Data, 8);
  d.set(Axis::DataReplica, 2);
  ASSERT_FALSE(degrees_error(d));
  const Layout layout(d, kTpCpEpDpPp);
  EXPECT_EQ(layout.size(Axis::DataShard), 4);
  EXPECT_EQ(layout.size(Axis::DataReplica), 2);
  EXPECT_EQ(layout.group(3, Axis::Data), (std::vector<int>{1, 3, 5, 7, 9, 11, 13, 15}));
  EXPECT_EQ(layout.group(3, Axis::DataShard), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(layout.group(3, Axis::DataReplica), (std::vector<int>{3, 11}));
  EXPECT_EQ(layout.groups(Axis::DataShard), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(layout.groups(Axis::DataReplica).size(), 8u);
  EXPECT_EQ(layout.groups(Axis::Data).size(), 2u);
  EXPECT_EQ(layout.coordinate(11, Axis::DataShard), 1);
  EXPECT_EQ(layout.coordinate(11, Axis::DataReplica), 1);
  d.set(Axis::DataReplica, 3);
  EXPECT_TRUE(degrees_error(d));
}

TEST(Layout, ExpertTensorTwoExpertFour) {
  // etp2 ep4 on tp2 cp2 dp2 pp2: expert_data 1; expert strides etp 1, ep 2, pp 8.
  Degrees d = degrees_with({{Axis::Tensor, 2},
                            {Axis::Context, 2},
                            {Axis::Expert, 4},
                            {Axis::ExpertTensor, 2},
                            {Axis::Data, 2},
                            {Axis::Pipeline, 2}});
  const Layout layout(d, kTpCpEpDpPp);
  EXPECT_EQ(layout.groups(Axis::Expert), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}}));
  EXPECT_EQ(layout.groups(Axis::ExpertTensor), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}}));
}

TEST(Layout, ThreeAxisPlacementsAsBefore) {
  // Today's plans: tp-dp-pp puts a stage's tensor ranks next to each other; tp-pp-dp (SageMaker's
  // cluster) keeps a pipeline inside consecutive ranks.
  const Degrees d = degrees_with({{Axis::Tensor, 2}, {Axis::ExpertTensor, 2}, {Axis::Data, 3}, {Axis::Pipeline, 2}});
  const Layout megatron(d, kMegatronPlacement);
  EXPECT_EQ(megatron.group(0, Axis::Data), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(megatron.group(7, Axis::Tensor), (std::vector<int>{6, 7}));
  EXPECT_EQ(megatron.with(1, Axis::Pipeline, 1), 7);
  const Layout cluster(d, Placement{Axis::Tensor, Axis::Pipeline, Axis::Data});
  EXPECT_EQ(cluster.group(0, Axis::Data), (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(cluster.group(0, Axis::Pipeline), (std::vector<int>{0, 2}));
  EXPECT_EQ(complete_order(kMegatronPlacement), kTpCpEpDpPp);
  EXPECT_EQ(to_string(kMegatronPlacement), "tp-dp-pp");
}

TEST(Layout, RejectsWhatCannotBeLaidOut) {
  EXPECT_TRUE(
      degrees_error(degrees_with({{Axis::Tensor, 2}, {Axis::Expert, 3}, {Axis::ExpertTensor, 1}, {Axis::Data, 2}})));
  EXPECT_TRUE(placement_error(Placement{Axis::Tensor, Axis::Data}));
  EXPECT_TRUE(placement_error(Placement{Axis::Tensor, Axis::Data, Axis::Data, Axis::Pipeline}));
  EXPECT_TRUE(placement_error(Placement{Axis::Tensor, Axis::ExpertData, Axis::Data, Axis::Pipeline}));
  EXPECT_FALSE(placement_error(Placement{Axis::Tensor, Axis::Context, Axis::Data, Axis::Pipeline}));
}

}  // namespace
}  // namespace mpsim::plan
