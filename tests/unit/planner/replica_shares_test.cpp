// Uneven batch shares: the min-max split of the microbatches over replicas of different speeds
// (closed forms and an exhaustive comparison), and the planner's shares on a cluster of two GPU kinds
// against the simulator's step.
#include "planner/replica_shares.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
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

TEST(MinMaxSharesWithCaps, CapsThatBindMoveMicrobatchesToTheOthers) {
  // Times 1 : 3 over 8: 6 + 2 uncapped (6 units); the fast replica capped at 4 leaves 4 to the slow (12).
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 3}, std::vector<int>{4, 8}, 8), (std::vector<int>{4, 4}));
  // Capped at 5: 5 + 3 (9 units), not 4 + 4.
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 3}, std::vector<int>{5, 8}, 8), (std::vector<int>{5, 3}));
  // Times 312 : 989 over 32 (12 + 12 + 4 + 4 uncapped) with the fast replicas capped at 10: the 4 they
  // give up go to the slow ones, 2 each.
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{312, 312, 989, 989}, std::vector<int>{10, 10, 32, 32}, 32),
            (std::vector<int>{10, 10, 6, 6}));
}

TEST(MinMaxSharesWithCaps, CapsAtOrAboveTheSharesLeaveThem) {
  const std::vector<std::int64_t> t{312, 312, 989, 989};
  EXPECT_EQ(min_max_shares(t, std::vector<int>{32, 32, 32, 32}, 32), min_max_shares(t, 32));
  EXPECT_EQ(min_max_shares(t, std::vector<int>{12, 12, 4, 4}, 32), min_max_shares(t, 32));
}

TEST(MinMaxSharesWithCaps, NoSplitFitsWhereTheCapsSumBelowTheTotal) {
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 3}, std::vector<int>{3, 4}, 8), std::nullopt);
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 3}, std::vector<int>{4, 4}, 8), (std::vector<int>{4, 4}));
  // A replica that cannot hold one microbatch: no split, since every replica runs at least one.
  EXPECT_EQ(min_max_shares(std::vector<std::int64_t>{1, 3}, std::vector<int>{0, 8}, 8), std::nullopt);
}

/// The least slowest-replica time over every split of `total` with 1 <= n_i <= caps[i]; nullopt if none.
std::optional<std::int64_t> brute_force_best(const std::vector<std::int64_t>& t, const std::vector<int>& caps,
                                             int total) {
  std::vector<int> n(t.size(), 1);
  std::optional<std::int64_t> best;
  const std::function<void(std::size_t, int)> place = [&](std::size_t i, int left) {
    if (i + 1 == t.size()) {
      if (left < 1 || left > caps[i]) return;
      n[i] = left;
      const std::int64_t slowest = slowest_replica(t, n);
      if (!best || slowest < *best) best = slowest;
      return;
    }
    for (int k = 1; k <= std::min(caps[i], left - 1); ++k) {
      n[i] = k;
      place(i + 1, left - k);
    }
  };
  place(0, total);
  return best;
}

TEST(MinMaxSharesWithCaps, NoSplitWithinTheCapsHasAFasterSlowestReplica) {
  // Every time vector over {1..4}^3, every cap vector over {0..5}^3 and every total from 3 to 12: the
  // function finds a split exactly where the enumeration does, within the caps, summing to the total,
  // and its slowest replica is the enumerated least.
  int feasible = 0;
  int infeasible = 0;
  for (std::int64_t a = 1; a <= 4; ++a) {
    for (std::int64_t b = 1; b <= 4; ++b) {
      for (std::int64_t c = 1; c <= 4; ++c) {
        const std::vector<std::int64_t> t{a, b, c};
        for (int ca = 0; ca <= 5; ++ca) {
          for (int cb = 0; cb <= 5; ++cb) {
            for (int cc = 0; cc <= 5; ++cc) {
              const std::vector<int> caps{ca, cb, cc};
              for (int total = 3; total <= 12; ++total) {
                const std::optional<std::vector<int>> shares = min_max_shares(t, caps, total);
                const std::optional<std::int64_t> best = brute_force_best(t, caps, total);
                const std::string where =
                    fmt::format("times {} caps {} total {}", fmt::join(t, ","), fmt::join(caps, ","), total);
                ASSERT_EQ(shares.has_value(), best.has_value()) << where;
                if (!shares) {
                  ++infeasible;
                  continue;
                }
                ++feasible;
                ASSERT_EQ(std::accumulate(shares->begin(), shares->end(), 0), total);
                for (std::size_t i = 0; i < 3; ++i) {
                  ASSERT_GE((*shares)[i], 1) << where;
                  ASSERT_LE((*shares)[i], caps[i]) << where;
                }
                ASSERT_EQ(slowest_replica(t, *shares), *best) << where;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(feasible, 0);
  EXPECT_GT(infeasible, 0);
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

  // The H100 replicas' 6 hold two stashes more than the even 4.
  EXPECT_EQ(peak(6) - peak(4), 2 * stash);
}

/// The data-only GPipe candidate of data_only(32) whose replicas run on the two kinds, its plan made
/// even, and the closed form of a replica's peak at n microbatches (above).
struct GpipeReplicas {
  plan::PlanSpec spec;  ///< with the uncapped shares
  plan::Plan even;
  std::int64_t fixed = 0, stash = 0, forward_working = 0, backward_working = 0, capacity = 0;
  std::int64_t t_h100 = 0, t_a100 = 0;  ///< a microbatch's forward and backward on each kind
  [[nodiscard]] std::int64_t peak(std::int64_t n) const {
    return fixed + std::max(n * stash + forward_working, (n - 1) * stash + backward_working);
  }
};

PlannerOptions gpipe_options() {
  PlannerOptions options = data_only(32);
  options.space.schedules = {plan::ScheduleKind::GPipe};
  options.memory_margin = 0;
  return options;
}

const Prepared* uneven_candidate(const std::vector<Prepared>& prepared) {
  const auto it = std::find_if(prepared.begin(), prepared.end(), [](const Prepared& p) {
    return p.spec.degrees[plan::Axis::Data] == 8 && !p.spec.replica_microbatches.empty();
  });
  return it == prepared.end() ? nullptr : &*it;
}

GpipeReplicas gpipe_replicas(const topology::Cluster& cluster, const model::Model& model) {
  GpipeReplicas out;
  const std::vector<Prepared> prepared = prepare_candidates(cluster, model, gpipe_options());
  const Prepared* uneven = uneven_candidate(prepared);
  if (uneven == nullptr) return out;
  out.spec = uneven->spec;
  out.even = plan::resolve_plan(out.spec, cluster, model);
  out.even.replica_microbatches.clear();
  const plan::Layout layout(out.even);
  const engine::CostModel h100 = engine::build_cost_model(cluster, model, out.even, layout, nullptr, 0);
  const engine::CostModel a100 = engine::build_cost_model(cluster, model, out.even, layout, nullptr, 4);
  out.stash = h100.chunk(0, 0).stashed.count();
  out.fixed = h100.ranks.front().static_memory.total().count();
  out.forward_working = h100.chunk(0, 0).forward_working.count();
  out.backward_working = h100.chunk(0, 0).backward_working.count();
  out.capacity = h100.ranks.front().memory_capacity.count();
  out.t_h100 = (h100.chunk(0, 0).forward + h100.chunk(0, 0).backward).base();
  out.t_a100 = (a100.chunk(0, 0).forward + a100.chunk(0, 0).backward).base();
  // Both kinds hold 80 GiB and the same layers: a replica's memory is the same on either.
  EXPECT_EQ(a100.ranks.front().memory_capacity.count(), out.capacity);
  EXPECT_EQ(a100.chunk(0, 0).stashed.count(), out.stash);
  return out;
}

// The H100 replicas' min-max share (6) does not fit where there is room for 5 stashes: each replica is
// capped at the largest count that fits (5 on either kind), the H100 replicas run 5 each and the 12 left
// go to the A100 replicas, 3 each; 3 A100 microbatches (3 x 106.6 ms) outlast 5 H100 ones (5 x 36.7 ms),
// and no split within the caps does better (an A100 replica at 2 would put 6 on an H100 one). The
// candidate, pruned before for its 6 stashes, is now planned with those shares.
TEST(ReplicaSharesPlanner, AShareThatDoesNotFitIsCutBackToTheLargestThatFits) {
  const topology::Cluster cluster = testing::mixed_cluster();
  const model::Model model = testing::shipped_model("gpt3-1.3b");
  const GpipeReplicas g = gpipe_replicas(cluster, model);
  ASSERT_EQ(g.spec.replica_microbatches, (std::vector<int>{6, 6, 6, 6, 2, 2, 2, 2}));
  ASSERT_GT(g.stash, 0);
  ASSERT_GT(5 * g.t_h100, 0);
  ASSERT_GT(3 * g.t_a100, 5 * g.t_h100);
  ASSERT_LT(2 * g.t_a100, 6 * g.t_h100);  // uncapped, the H100 replicas' 6 set the step

  PlannerOptions options = gpipe_options();
  options.memory_reserve = Bytes::bytes(g.capacity - g.peak(5));  // room for 5 stashes, not 6
  const Bytes usable = usable_memory(Bytes::bytes(g.capacity), options.memory_reserve, options.memory_margin);
  ASSERT_EQ(usable.count(), g.peak(5));
  ASSERT_GT(g.peak(6), usable.count());  // the uncapped shares' peak: the rule before pruned them
  const std::vector<Prepared> prepared = prepare_candidates(cluster, model, options);
  const Prepared* capped = uneven_candidate(prepared);
  ASSERT_NE(capped, nullptr);
  const std::vector<int> by_hand{5, 5, 5, 5, 3, 3, 3, 3};
  EXPECT_EQ(capped->spec.replica_microbatches, by_hand);
  EXPECT_EQ(capped->estimate.peak_memory.count(), g.peak(5));

  const PlannerResult r = run_planner(cluster, model, options);
  ASSERT_FALSE(r.ranked.empty());
  const plan::Plan& best = r.ranked.front().plan;
  EXPECT_EQ(best.replica_microbatches, by_hand);
  // Simulated: the H100 replicas peak at 5 stashes, within the memory; the step is the A100 replicas'
  // 3 microbatches and the tail (gradient all-reduce, optimizer step) that the even plan has after its 4.
  const trace::Report run = engine::simulate(cluster, model, best).report;
  EXPECT_FALSE(run.oom);
  EXPECT_EQ(run.devices.front().peak_memory_bytes, g.peak(5));
  EXPECT_EQ(run.peak_memory_bytes, g.peak(5));
  const std::int64_t step = TimeNs::seconds(run.step_time_s).base();
  const std::int64_t even_step = TimeNs::seconds(engine::simulate(cluster, model, g.even).report.step_time_s).base();
  EXPECT_NEAR(static_cast<double>(step - 3 * g.t_a100), static_cast<double>(even_step - 4 * g.t_a100),
              1e-4 * static_cast<double>(step));
  EXPECT_LT(step, even_step);
}

// Room for 4 stashes: the caps (4 each) leave only the even split, which the candidate then runs. Room
// for 3: the caps sum to 24 of the 32 microbatches, no split fits, and the candidate is pruned.
TEST(ReplicaSharesPlanner, CapsThatLeaveNoSplitPruneTheCandidate) {
  const topology::Cluster cluster = testing::mixed_cluster();
  const model::Model model = testing::shipped_model("gpt3-1.3b");
  const GpipeReplicas g = gpipe_replicas(cluster, model);
  ASSERT_EQ(g.spec.replica_microbatches, (std::vector<int>{6, 6, 6, 6, 2, 2, 2, 2}));

  PlannerOptions options = gpipe_options();
  options.memory_reserve = Bytes::bytes(g.capacity - g.peak(4));
  const std::vector<Prepared> even = prepare_candidates(cluster, model, options);
  EXPECT_EQ(uneven_candidate(even), nullptr);
  const auto evened = std::find_if(even.begin(), even.end(), [&](const Prepared& p) {
    plan::PlanSpec uneven = p.spec;
    uneven.replica_microbatches = g.spec.replica_microbatches;
    return uneven == g.spec;
  });
  ASSERT_NE(evened, even.end());
  EXPECT_TRUE(evened->spec.replica_microbatches.empty());
  EXPECT_EQ(evened->estimate.peak_memory.count(), g.peak(4));
  const PlannerResult fits = run_planner(cluster, model, options);
  ASSERT_FALSE(fits.ranked.empty());
  EXPECT_TRUE(fits.ranked.front().plan.replica_microbatches.empty());
  EXPECT_EQ(fits.ranked.front().plan.microbatches, 4);

  options.memory_reserve = Bytes::bytes(g.capacity - g.peak(3));
  const std::vector<Prepared> none = prepare_candidates(cluster, model, options);
  const Prepared* kept = uneven_candidate(none);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->spec.replica_microbatches, g.spec.replica_microbatches);  // no split fits: left as it was
  EXPECT_EQ(kept->estimate.peak_memory.count(), g.peak(6));
  const PlannerResult r = run_planner(cluster, model, options);
  EXPECT_GE(r.stats.pruned_memory, 1U);
  for (const Evaluated& e : r.ranked) {
    EXPECT_LE(e.report.peak_memory_bytes, g.peak(3)) << e.id;
    EXPECT_NE(e.plan.replica_microbatches, g.spec.replica_microbatches) << e.id;
  }
}

TEST(ReplicaSharesPlanner, ReplicasOnOneKindShareEvenly) {
  const PlannerResult r =
      run_planner(testing::short_cluster(2, 4), testing::shipped_model("gpt3-1.3b"), data_only(32));
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_TRUE(r.ranked.front().plan.replica_microbatches.empty());
}

}  // namespace
}  // namespace mpsim::planner::replica_shares_test
