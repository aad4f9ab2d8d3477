// Zero Bubble's automatic schedule against the exhaustive optimum: on small shapes, every order of
// every stage under the memory limit is tried with the heuristic's unit times, and the heuristic's
// schedule is as short as the best of them but for one shape, where it is one pass longer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;

/// The longest stage, from its first forward's start to its last pass's end, when every pass takes 1
/// and waits for its dependency (F on the previous stage, I on the next): the heuristic's objective.
/// Nothing when the orders deadlock.
std::optional<std::int64_t> span(const std::vector<std::vector<Op>>& orders, int m) {
  const int p = static_cast<int>(orders.size());
  std::vector<std::vector<std::int64_t>> forward_end(static_cast<std::size_t>(p), std::vector<std::int64_t>(m, -1));
  std::vector<std::vector<std::int64_t>> input_end = forward_end;
  std::vector<std::size_t> next(static_cast<std::size_t>(p));
  std::vector<std::int64_t> free_at(static_cast<std::size_t>(p)), first(static_cast<std::size_t>(p), -1);
  for (bool moved = true; moved;) {
    moved = false;
    for (int j = 0; j < p; ++j) {
      const auto js = static_cast<std::size_t>(j);
      while (next[js] < orders[js].size()) {
        const Op& op = orders[js][next[js]];
        const auto k = op.microbatch;
        std::int64_t ready = free_at[js];
        if (op.kind == OpKind::Forward && j > 0) {
          if (forward_end[js - 1][k] < 0) break;
          ready = std::max(ready, forward_end[js - 1][k]);
        }
        if (op.kind == OpKind::BackwardInput && j + 1 < p) {
          if (input_end[js + 1][k] < 0) break;
          ready = std::max(ready, input_end[js + 1][k]);
        }
        if (first[js] < 0) first[js] = ready;
        free_at[js] = ready + 1;
        if (op.kind == OpKind::Forward) forward_end[js][k] = free_at[js];
        if (op.kind == OpKind::BackwardInput) input_end[js][k] = free_at[js];
        ++next[js];
        moved = true;
      }
    }
  }
  std::int64_t longest = 0;
  for (int j = 0; j < p; ++j) {
    const auto js = static_cast<std::size_t>(j);
    if (next[js] < orders[js].size()) return std::nullopt;
    longest = std::max(longest, free_at[js] - first[js]);
  }
  return longest;
}

/// Every order of m F, I and W on one stage with I after its F, W after its I, and at most `limit`
/// microbatches between their F and their W.
std::vector<std::vector<Op>> stage_orders(int m, int limit) {
  std::vector<std::vector<Op>> out;
  std::vector<Op> order;
  std::function<void(int, int, int)> walk = [&](int f, int i, int w) {
    if (w == m) {
      out.push_back(order);
      return;
    }
    const auto step = [&](OpKind kind, int index, int nf, int ni, int nw) {
      order.push_back(compute_op(kind, index));
      walk(nf, ni, nw);
      order.pop_back();
    };
    if (f < m && f - w < limit) step(OpKind::Forward, f, f + 1, i, w);
    if (i < f) step(OpKind::BackwardInput, i, f, i + 1, w);
    if (w < i) step(OpKind::BackwardWeight, w, f, i, w + 1);
  };
  walk(0, 0, 0);
  return out;
}

TEST(ZbAuto, MatchesTheExhaustiveOptimumOnSmallShapes) {
  // (stages, microbatches): 2 x 2..4 and 3 x 3, every memory limit from 1 to 4 (up to 462 orders per
  // stage, 213,444 schedules for 2 x 4).
  for (const auto& shape : {std::pair{2, 2}, std::pair{2, 3}, std::pair{2, 4}, std::pair{3, 3}}) {
    const int p = shape.first;  // variables, not bindings: the lambda below captures them
    const int m = shape.second;
    for (const int limit : {1, 2, 3, 4}) {
      const auto orders = stage_orders(m, limit);
      std::int64_t best = std::numeric_limits<std::int64_t>::max();
      std::vector<std::vector<Op>> pick(static_cast<std::size_t>(p));
      std::function<void(int)> choose = [&](int j) {
        if (j == p) {
          if (const auto s = span(pick, m)) best = std::min(best, *s);
          return;
        }
        for (const auto& order : orders) {
          pick[static_cast<std::size_t>(j)] = order;
          choose(j + 1);
        }
      };
      choose(0);
      PipelineShape shape = testing::shape(ScheduleKind::ZbAuto, p, m);
      shape.memory_limit = limit;
      const auto got = span(make_program(shape).streams, m);
      ASSERT_TRUE(got.has_value());
      // A heuristic: one shape of these misses by one pass (15 against 14), where a memory limit below
      // the pipeline depth starves the warm-up; the reference refines with an ILP, which mpsim does not.
      const bool known_gap = p == 3 && m == 3 && limit == 2;
      EXPECT_EQ(*got, best + (known_gap ? 1 : 0)) << "p=" << p << " m=" << m << " limit=" << limit;
    }
  }
}

}  // namespace
}  // namespace mpsim::schedule
