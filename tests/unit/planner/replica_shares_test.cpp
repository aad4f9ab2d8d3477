// Uneven batch shares: the min-max split of the microbatches over replicas of different speeds
// (closed forms and an exhaustive comparison), and the planner's shares on a cluster of two GPU kinds
// against the simulator's step.
#include "planner/replica_shares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include "planner_test_support.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"

namespace mpsim::planner::replica_shares_test {
namespace {

TEST(MinMaxShares, ProportionalToSpeedWhereItDividesExactly) {
  // n_i ∝ 1 / t_i: times 1 : 3 over 8 microbatches give 6 and 2 (both replicas 6 units long).
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 3}, 8), (std::vector<int>{6, 2}));
  // 2 : 3 over 10: 6 and 4 (12 units each).
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{2, 3}, 10), (std::vector<int>{6, 4}));
  // Four replicas of two kinds, 989 : 312 (the H100's and the A100's bf16 peaks) over 32.
  const std::vector<std::int64_t> t{312, 312, 989, 989};
  const std::vector<int> shares = min_max_shares(t, 32);
  EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), 0), 32);
  // 32 x 989 / (2 x 989 + 2 x 312) = 12.2 on a fast replica, 3.8 on a slow one: 12 + 12 + 4 + 4.
  EXPECT_EQ(shares, (std::vector<int>{12, 12, 4, 4}));
}

TEST(MinMaxShares, EqualTimesSplitEvenlyTheRemainderFirst) {
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{5, 5, 5}, 9), (std::vector<int>{3, 3, 3}));
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{5, 5, 5}, 7), (std::vector<int>{3, 2, 2}));
}

TEST(MinMaxShares, EveryReplicaRunsAtLeastOne) {
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 100, 100}, 3), (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 100}, 5), (std::vector<int>{4, 1}));
}

/// The least slowest-replica time over every split of `total` into parts of at least one.
std::int64_t brute_force_best(const std::vector<std::int64_t>& t, int total) {
  std::vector<int> n(t.size(), 1);
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  const std::function<void(std::size_t, int)> place = [&](std::size_t i, int left) {
    if (i + 1 == t.size()) {
      n[i] = left;
      best = std::min(best, slowest_replica(t, n));
      return;
    }
    for (int k = 1; k <= left - static_cast<int>(t.size() - i - 1); ++k) {
      n[i] = k;
      place(i + 1, left - k);
    }
  };
  place(0, total);
  return best;
}

TEST(MinMaxShares, NoSplitHasAFasterSlowestReplica) {
  // Every time vector over {1..5}^3 and every total from 3 to 12: the split is optimal, sums to the total.
  for (std::int64_t a = 1; a <= 5; ++a) {
    for (std::int64_t b = 1; b <= 5; ++b) {
      for (std::int64_t c = 1; c <= 5; ++c) {
        const std::vector<std::int64_t> t{a, b, c};
        for (int total = 3; total <= 12; ++total) {
          const std::vector<int> shares = min_max_shares(t, total);
          EXPECT_EQ(std::accumulate(shares.begin(), shares.end(), 0), total);
          EXPECT_TRUE(std::all_of(shares.begin(), shares.end(), [](int n) { return n >= 1; }));
          EXPECT_EQ(slowest_replica(t, shares), brute_force_best(t, total)) << a << " " << b << " " << c << " " << total;
        }
      }
    }
  }
}

/// Tensor 1, pipeline 1, 1F1B, nothing overlapped, micro batch 1 on one H100 node and one A100 node:
/// eight data-parallel replicas, 0 to 3 on H100s and 4 to 7 on A100s.
PlannerOptions data_only(int global_batch) {
  PlannerOptions options;
  options.space.global_batch = global_batch;
  options.space.only_degrees = {{plan::Axis::Pipeline, {1}}, {plan::Axis::Tensor, {1}}};
  options.space.schedules = {plan::ScheduleKind::OneFOneB};
  options.space.recompute = {model::Recompute::None};
  options.space.zero = {0};
  options.space.overlap = {false};
  options.space.max_micro_batch = 1;
  options.top = 1;
  return options;
}

TEST(ReplicaSharesPlanner, ReplicasOnTwoKindsGetSharesThatEqualiseThem) {
  const topology::Cluster cluster = testing::mixed_cluster();
  const model::Model model = testing::shipped_model("gpt3-1.3b");
  const int global_batch = 32;  // 4 microbatches per replica when even, 32 in all
  const PlannerResult r = run_planner(cluster, model, data_only(global_batch));
  ASSERT_FALSE(r.ranked.empty());
  const plan::Plan& shared = r.ranked.front().plan;
  ASSERT_EQ(shared.degrees[plan::Axis::Data], 8);
  ASSERT_EQ(shared.microbatches, 4);
  // Each replica's microbatch (forward and backward, the simulator's own costs on its kind).
  const plan::Layout layout(shared);
  std::vector<std::int64_t> t;
  for (int d = 0; d < 8; ++d) {
    const engine::CostModel costs = engine::build_cost_model(cluster, model, shared, layout, nullptr, d);
    t.push_back((costs.chunk(0, 0).forward + costs.chunk(0, 0).backward).base());
  }
  EXPECT_EQ(t[0], t[3]);
  EXPECT_EQ(t[4], t[7]);
  EXPECT_GT(t[4], 2 * t[0]);  // an A100 takes more than twice an H100's time
  // (a) The planner's shares are the min-max split of those speeds (n_i ∝ 1 / t_i, rounded by the rule).
  EXPECT_EQ(shared.replica_microbatches, min_max_shares(t, global_batch));
  EXPECT_GT(shared.replica_microbatches.front(), shared.replica_microbatches.back());
  // (b) The step is the slowest replica's microbatches, then the gradient all-reduce and the optimizer
  // step (the tail), which the even split has too: step - max_i n_i t_i is the same for both.
  plan::Plan even = shared;
  even.replica_microbatches.clear();
  const std::int64_t step = TimeNs::seconds(engine::simulate(cluster, model, shared).report.step_time_s).base();
  const std::int64_t even_step = TimeNs::seconds(engine::simulate(cluster, model, even).report.step_time_s).base();
  const std::int64_t slowest = slowest_replica(t, shared.replica_microbatches);
  const std::int64_t even_slowest = 4 * t[4];
  const std::int64_t tail = even_step - even_slowest;
  EXPECT_GT(tail, 0);
  EXPECT_NEAR(static_cast<double>(step - slowest), static_cast<double>(tail), 1e-4 * static_cast<double>(step));
  // (c) So the shares shorten the step by the closed form's amount, 4 t_A100 - max_i n_i t_i.
  EXPECT_NEAR(static_cast<double>(even_step - step), static_cast<double>(even_slowest - slowest),
              1e-4 * static_cast<double>(step));
  EXPECT_LT(step, even_step);
  std::printf("shares %s: step %.4f s, even %.4f s, per microbatch H100 %.2f ms, A100 %.2f ms\n",
              fmt::format("{}", fmt::join(shared.replica_microbatches, "+")).c_str(), static_cast<double>(step) * 1e-9,
              static_cast<double>(even_step) * 1e-9, static_cast<double>(t[0]) * 1e-6, static_cast<double>(t[4]) * 1e-6);
}

// GPipe on one stage stashes every microbatch before its first backward, so a replica of n microbatches
// peaks at its last forward (static + n stashes + the forward's working memory) or at its first
// backward (static + n - 1 stashes, the running microbatch's being in the backward's working memory):
// the H100 replicas' 6 of the planner's shares hold 2 stashes more than the even 4. The estimate takes
// each replica's own count (the simulator's rule), so a reserve that leaves room for the even count and
// one stash more prunes the candidate before simulating, as the simulated peak of its shares would
// reject it after.
TEST(ReplicaSharesPlanner, TheLargestShareSetsTheMemoryEstimate) {
  const topology::Cluster cluster = testing::mixed_cluster();
  const model::Model model = testing::shipped_model("gpt3-1.3b");
  PlannerOptions options = data_only(32);
  options.space.schedules = {plan::ScheduleKind::GPipe};
  options.memory_margin = 0;
  const std::vector<Prepared> prepared = prepare_candidates(cluster, model, options);
  const auto it = std::find_if(prepared.begin(), prepared.end(), [](const Prepared& p) {
    return p.spec.degrees[plan::Axis::Data] == 8 && !p.spec.replica_microbatches.empty();
  });
  ASSERT_NE(it, prepared.end());
  ASSERT_EQ(it->spec.replica_microbatches, (std::vector<int>{6, 6, 6, 6, 2, 2, 2, 2}));
  const plan::Plan shared = plan::resolve_plan(it->spec, cluster, model);
  plan::Plan even = shared;
  even.replica_microbatches.clear();
  ASSERT_EQ(even.microbatches, 4);
  const engine::CostModel costs = engine::build_cost_model(cluster, model, even, plan::Layout(even), nullptr, 0);
  const std::int64_t stash = costs.chunk(0, 0).stashed.count();
  const std::int64_t fixed = costs.ranks.front().static_memory.total().count();
  const std::int64_t forward_working = costs.chunk(0, 0).forward_working.count();
  const std::int64_t backward_working = costs.chunk(0, 0).backward_working.count();
  const auto peak = [&](std::int64_t n) {
    return fixed + std::max(n * stash + forward_working, (n - 1) * stash + backward_working);
  };
  ASSERT_GT(stash, 0);
  // The closed form, the estimate and the simulator agree: replica 0 (an H100) holds its 6 stashes.
  const trace::Report uneven_run = engine::simulate(cluster, model, shared).report;
  const trace::Report even_run = engine::simulate(cluster, model, even).report;
  const std::int64_t even_peak = even_run.devices.front().peak_memory_bytes;
  EXPECT_EQ(even_peak, peak(4));
  EXPECT_EQ(uneven_run.devices.front().peak_memory_bytes, peak(6));
  EXPECT_EQ(uneven_run.peak_memory_bytes, peak(6));
  EXPECT_EQ(it->estimate.peak_memory.count(), peak(6));
  EXPECT_EQ(it->estimate.peak_rank, 0);
  EXPECT_EQ(it->estimate.static_memory.count(), fixed);

  // Room for the even count and one stash more: the even estimate fits, the H100 replicas' share does not.
  const std::int64_t capacity = costs.ranks.front().memory_capacity.count();
  options.memory_reserve = Bytes::bytes(capacity - (even_peak + stash));
  const std::vector<Prepared> reserved = prepare_candidates(cluster, model, options);
  const auto pruned = std::find_if(reserved.begin(), reserved.end(),
                                   [&](const Prepared& p) { return p.spec == it->spec; });
  ASSERT_NE(pruned, reserved.end());
  const Bytes usable = usable_memory(Bytes::bytes(capacity), options.memory_reserve, options.memory_margin);
  EXPECT_LE(Bytes::bytes(even_peak), usable);
  EXPECT_GT(pruned->estimate.peak_memory, usable);
  const PlannerResult r = run_planner(cluster, model, options);
  EXPECT_GE(r.stats.pruned_memory, 1U);
  for (const Evaluated& e : r.ranked) EXPECT_NE(e.plan.replica_microbatches, shared.replica_microbatches) << e.id;
}

TEST(ReplicaSharesPlanner, ReplicasOnOneKindShareEvenly) {
  const PlannerResult r =
      run_planner(testing::short_cluster(2, 4), testing::shipped_model("gpt3-1.3b"), data_only(32));
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_TRUE(r.ranked.front().plan.replica_microbatches.empty());
}

}  // namespace
}  // namespace mpsim::planner::replica_shares_test
