// The balanced partitioner against brute force: every way to cut small random sequences.
#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "planner/partitioner.h"

namespace mpsim::planner {
namespace {

/// Every boundary vector of `parts` non-empty stages over n units, in lexicographic order.
void all_partitions(int n, int parts, const std::function<void(const std::vector<int>&)>& visit) {
  std::vector<int> bounds{0};
  std::function<void()> rec = [&] {
    const int placed = static_cast<int>(bounds.size()) - 1;
    if (placed == parts - 1) {
      bounds.push_back(n);
      visit(bounds);
      bounds.pop_back();
      return;
    }
    const int left = parts - placed - 1;  // stages still to place after this one
    for (int end = bounds.back() + 1; end <= n - left; ++end) {
      bounds.push_back(end);
      rec();
      bounds.pop_back();
    }
  };
  rec();
}

TEST(BalancedPartition, MatchesBruteForceOnRandomInputs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 400; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 10)(rng);
    const int parts = std::uniform_int_distribution<int>(1, n)(rng);
    const int spread = trial % 3 == 0 ? 3 : 100;  // few distinct values: many ties
    std::vector<std::int64_t> costs(static_cast<std::size_t>(n));
    for (auto& c : costs) c = std::uniform_int_distribution<std::int64_t>(0, spread)(rng);

    std::int64_t best = -1;
    std::vector<int> first_best;
    all_partitions(n, parts, [&](const std::vector<int>& b) {
      const std::int64_t cost = bottleneck(costs, b);
      if (best < 0 || cost < best) {
        best = cost;
        first_best = b;  // lexicographic order: the first optimum is the smallest
      }
    });
    const std::vector<int> got = balanced_partition(costs, parts);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(parts) + 1);
    EXPECT_EQ(bottleneck(costs, got), best) << "trial " << trial;
    EXPECT_EQ(got, first_best) << "trial " << trial;
  }
}

TEST(BalancedPartition, UniformLayersSplitEvenly) {
  const std::vector<std::int64_t> costs(24, 5);
  EXPECT_EQ(balanced_partition(costs, 4), (std::vector<int>{0, 6, 12, 18, 24}));
}

TEST(BalancedPartition, AHeavyLastUnitMovesLayersForward) {
  // The last unit carries an output head: the even split [0, 3, 6] has a 60 stage, the optimum 50,
  // reached by [0, 4, 6] and [0, 5, 6]; the first stage is kept as short as the optimum allows.
  const std::vector<std::int64_t> costs{10, 10, 10, 10, 10, 40};
  const std::vector<int> got = balanced_partition(costs, 2);
  EXPECT_EQ(bottleneck(costs, got), 50);
  EXPECT_EQ(got, (std::vector<int>{0, 4, 6}));
}

TEST(BalancedPartition, OneStageAndOneUnitPerStage) {
  const std::vector<std::int64_t> costs{3, 1, 4, 1, 5};
  EXPECT_EQ(balanced_partition(costs, 1), (std::vector<int>{0, 5}));
  EXPECT_EQ(balanced_partition(costs, 5), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}


/// The largest stage cost of `boundaries` when stage s costs stage_costs[s][u] per unit u.
std::int64_t per_stage_bottleneck(const std::vector<std::vector<std::int64_t>>& stage_costs,
                                  const std::vector<int>& boundaries) {
  std::int64_t worst = 0;
  for (std::size_t s = 0; s + 1 < boundaries.size(); ++s) {
    std::int64_t stage = 0;
    for (int i = boundaries[s]; i < boundaries[s + 1]; ++i) stage += stage_costs[s][static_cast<std::size_t>(i)];
    worst = std::max(worst, stage);
  }
  return worst;
}

/// 1 to 9 units over 1 to n stages, each stage with its own cost of each unit; every other trial draws
/// from few values (many ties).
std::vector<std::vector<std::int64_t>> random_stage_costs(std::mt19937& rng, int trial) {
  const int n = std::uniform_int_distribution<int>(1, 9)(rng);
  const int parts = std::uniform_int_distribution<int>(1, n)(rng);
  std::vector<std::vector<std::int64_t>> stage_costs(static_cast<std::size_t>(parts));
  for (auto& row : stage_costs) {
    row.resize(static_cast<std::size_t>(n));
    for (auto& c : row) c = std::uniform_int_distribution<std::int64_t>(0, trial % 2 == 0 ? 3 : 100)(rng);
  }
  return stage_costs;
}

TEST(BalancedPartition, PerStageCostsMatchBruteForce) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<std::vector<std::int64_t>> stage_costs = random_stage_costs(rng, trial);
    const int n = static_cast<int>(stage_costs.front().size());
    const int parts = static_cast<int>(stage_costs.size());
    std::int64_t best = -1;
    std::vector<int> first_best;
    all_partitions(n, parts, [&](const std::vector<int>& b) {
      const std::int64_t cost = per_stage_bottleneck(stage_costs, b);
      if (best < 0 || cost < best) {
        best = cost;
        first_best = b;
      }
    });
    const std::vector<int> got = balanced_partition(stage_costs);
    EXPECT_EQ(per_stage_bottleneck(stage_costs, got), best) << "trial " << trial;
    EXPECT_EQ(got, first_best) << "trial " << trial;
  }
}

TEST(BalancedPartition, TwoStagesAtDifferentSpeedsGetTheSplitThatEqualisesThem) {
  // 12 equal blocks; stage 1's GPUs take twice as long per block (speeds s1 = 2 s2). Equal stage
  // times need n1 / s1 = n2 / s2 with n1 + n2 = 12: n1 = 12 s1 / (s1 + s2) = 8, n2 = 4, each 8 units
  // of the fast stage's time, where the even split [0, 6, 12] leaves the slow stage at 12.
  const std::vector<std::vector<std::int64_t>> stage_costs{std::vector<std::int64_t>(12, 1),
                                                           std::vector<std::int64_t>(12, 2)};
  const std::vector<int> got = balanced_partition(stage_costs);
  EXPECT_EQ(got, (std::vector<int>{0, 8, 12}));
  EXPECT_EQ(per_stage_bottleneck(stage_costs, got), 8);
  EXPECT_EQ(per_stage_bottleneck(stage_costs, {0, 6, 12}), 12);
  // Speeds 3 : 1 over 12 blocks: 9 and 3.
  const std::vector<std::vector<std::int64_t>> three_to_one{std::vector<std::int64_t>(12, 1),
                                                            std::vector<std::int64_t>(12, 3)};
  EXPECT_EQ(balanced_partition(three_to_one), (std::vector<int>{0, 9, 12}));
  // Equal rows: the uniform partitioner's answer.
  const std::vector<std::int64_t> costs{10, 10, 10, 10, 10, 40};
  EXPECT_EQ(balanced_partition(std::vector<std::vector<std::int64_t>>(2, costs)), balanced_partition(costs, 2));
}

TEST(BalancedPartition, SpreadTieMatchesBruteForce) {
  // The optimal partition with the least sum of squared stage costs, the first such in lexicographic order.
  std::mt19937 rng(13);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<std::vector<std::int64_t>> stage_costs = random_stage_costs(rng, trial);
    const int n = static_cast<int>(stage_costs.front().size());
    const int parts = static_cast<int>(stage_costs.size());
    const std::int64_t optimum = per_stage_bottleneck(stage_costs, balanced_partition(stage_costs));
    double least = -1;
    std::vector<int> first_least;
    all_partitions(n, parts, [&](const std::vector<int>& b) {
      if (per_stage_bottleneck(stage_costs, b) > optimum) return;
      double squares = 0;
      for (std::size_t s = 0; s + 1 < b.size(); ++s) {
        std::int64_t c = 0;
        for (int u = b[s]; u < b[s + 1]; ++u) c += stage_costs[s][static_cast<std::size_t>(u)];
        squares += static_cast<double>(c) * static_cast<double>(c);
      }
      if (least < 0 || squares < least) {
        least = squares;
        first_least = b;
      }
    });
    EXPECT_EQ(balanced_partition(stage_costs, OptimalTie::Spread), first_least) << "trial " << trial;
  }
}

TEST(BalancedPartition, SpreadLeavesTheSlackOfASlowLastStageToTheOthers) {
  // Three fast stages (1 a block) and a slow last one (10 a block) over 24 blocks whose last is a head
  // of 30 on the slow stage: the slow stage takes the head alone (30) and sets the optimum. Short-first
  // then gives the fast stages 1, 1 and 21 blocks (21 <= 30); spread gives 7, 8 and 8.
  std::vector<std::vector<std::int64_t>> stage_costs(3, std::vector<std::int64_t>(24, 1));
  stage_costs[0][23] = stage_costs[1][23] = stage_costs[2][23] = 3;
  std::vector<std::int64_t> slow(24, 10);
  slow[23] = 30;
  stage_costs.push_back(slow);
  EXPECT_EQ(balanced_partition(stage_costs), (std::vector<int>{0, 1, 2, 23, 24}));
  EXPECT_EQ(balanced_partition(stage_costs, OptimalTie::Spread), (std::vector<int>{0, 7, 15, 23, 24}));
  EXPECT_EQ(per_stage_bottleneck(stage_costs, {0, 7, 15, 23, 24}), 30);
}

}  // namespace
}  // namespace mpsim::planner
