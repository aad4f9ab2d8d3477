// The balanced partitioner against brute force: every way to cut small random sequences.
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

}  // namespace
}  // namespace mpsim::planner
