// The speculative ordered search commits exactly what a sequential loop would, whatever the thread
// count and however long each evaluation takes; the Pareto front; the thread helpers.
#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "planner/ordered_search.h"
#include "planner/pareto.h"
#include "planner/thread_pool.h"

namespace mpsim::planner {
namespace {

/// A branch and bound over random (bound, value) items sorted by bound, keeping the best 3 values;
/// items whose value is odd are skipped when some committed value is below their bound.
std::vector<std::size_t> search(const std::vector<std::pair<int, int>>& items, int threads) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<int> best;  // sorted, at most 3
  std::vector<std::size_t> committed;
  OrderedSearch<int> s;
  s.decide = [&](std::size_t i) {
    if (best.size() == 3 && items[i].first > best.back()) return Decision::Stop;
    if (items[i].second % 2 == 1 && !best.empty() && best.front() < items[i].first) return Decision::Skip;
    return Decision::Evaluate;
  };
  s.evaluate = [&](std::size_t i) {
    std::this_thread::sleep_for(std::chrono::microseconds((i * 7919) % 300));  // out-of-order finishes
    return items[i].second;
  };
  s.commit = [&](std::size_t i, int&& value) {
    committed.push_back(i);
    best.insert(std::upper_bound(best.begin(), best.end(), value), value);
    if (best.size() > 3) best.pop_back();
  };
  run_ordered_search(order, threads, s);
  return committed;
}

TEST(OrderedSearch, CommitsWhatASequentialLoopCommits) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<std::pair<int, int>> items;
    int bound = 0;
    for (int i = 0; i < 60; ++i) {
      bound += std::uniform_int_distribution<int>(0, 3)(rng);
      items.emplace_back(bound, bound + std::uniform_int_distribution<int>(0, 40)(rng));  // value >= bound
    }
    const auto one = search(items, 1);
    EXPECT_FALSE(one.empty());
    EXPECT_EQ(search(items, 2), one) << "trial " << trial;
    EXPECT_EQ(search(items, 7), one) << "trial " << trial;
  }
}

TEST(OrderedSearch, EmptyAndExceptions) {
  OrderedSearch<int> s;
  s.decide = [](std::size_t) { return Decision::Evaluate; };
  s.evaluate = [](std::size_t i) -> int {
    if (i == 5) throw std::logic_error("boom");
    return 0;
  };
  s.commit = [](std::size_t, int&&) {};
  run_ordered_search<int>({}, 4, s);
  std::vector<std::size_t> items(10);
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = i;
  EXPECT_THROW(run_ordered_search(items, 3, s), std::logic_error);
}

TEST(ThreadPool, EveryIndexOnce) {
  std::vector<int> hits(1000, 0);
  parallel_for(hits.size(), 4, [&](std::size_t i) { ++hits[i]; });
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 1000);
  EXPECT_GE(effective_threads(0), 1);
  EXPECT_EQ(effective_threads(3), 3);
}

TEST(ParetoFront, KeepsPlansNothingBeatsOnBothAxes) {
  const std::vector<ParetoPoint> points{
      {10, 50, 0},  // on it
      {12, 40, 1},  // on it
      {12, 45, 2},  // beaten by 1
      {20, 30, 3},  // on it
      {20, 30, 4},  // equal to 3, later id
      {25, 35, 5},  // beaten by 3
      {9, 60, 6},   // on it: fastest
  };
  const auto front = pareto_front(points);
  EXPECT_EQ(front, (std::vector<std::size_t>{3, 1, 0, 6}));
  EXPECT_TRUE(pareto_front({}).empty());
}

}  // namespace
}  // namespace mpsim::planner
