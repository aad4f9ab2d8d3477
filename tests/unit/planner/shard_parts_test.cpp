// A search divided over processes: the parts, written as text and read back, merge into the answer
// of one process; one process's own part reads back as itself.
#include "planner/shard_parts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::ids;
using testing::shipped_model;
using testing::short_cluster;

void expect_same(const PlannerResult& a, const PlannerResult& b) {
  EXPECT_EQ(ids(a.ranked), ids(b.ranked));
  EXPECT_EQ(ids(a.pareto), ids(b.pareto));
  ASSERT_EQ(a.ranked.size(), b.ranked.size());
  for (std::size_t k = 0; k < a.ranked.size(); ++k) {
    EXPECT_EQ(a.ranked[k].plan, b.ranked[k].plan) << k;
    EXPECT_EQ(a.ranked[k].report.step_time_s, b.ranked[k].report.step_time_s) << k;
    EXPECT_EQ(a.ranked[k].report.peak_memory_bytes, b.ranked[k].report.peak_memory_bytes) << k;
    EXPECT_EQ(a.ranked[k].estimate.lower_bound, b.ranked[k].estimate.lower_bound) << k;
    EXPECT_EQ(a.ranked[k].estimate.peak_memory, b.ranked[k].estimate.peak_memory) << k;
  }
  EXPECT_EQ(a.capacity, b.capacity);
}

struct Case {
  topology::Cluster cluster = short_cluster(2, 4);
  model::Model model = shipped_model("gpt3-1.3b");
  PlannerOptions options;
  Case() {
    options.space.global_batch = 16;
    options.top = 3;
  }
};

TEST(ShardParts, OneProcessPartReadsBackAsItself) {
  const Case c;
  const PlannerResult whole = run_planner(c.cluster, c.model, c.options);
  const std::string text = shard_part_text(whole);
  const PlannerResult back = merge_shard_parts({text}, whole, c.options, c.cluster, c.model);
  expect_same(back, whole);
  EXPECT_EQ(back.stats.candidates, whole.stats.candidates);
  EXPECT_EQ(back.stats.evaluated, whole.stats.evaluated);
  EXPECT_EQ(back.stats.pruned_memory, whole.stats.pruned_memory);
}

TEST(ShardParts, DividedPartsMergeIntoTheOneProcessAnswer) {
  const Case c;
  const PlannerResult whole = run_planner(c.cluster, c.model, c.options);
  std::vector<PlannerResult> mine;
  std::vector<std::string> texts;
  for (int shard = 0; shard < 3; ++shard) {
    PlannerOptions part = c.options;
    part.shard = shard;
    part.shards = 3;
    mine.push_back(run_planner(c.cluster, c.model, part));
    texts.push_back(shard_part_text(mine.back()));
  }
  const PlannerResult merged =
      merge_shard_parts({texts[0], texts[1], texts[2]}, mine.front(), c.options, c.cluster, c.model);
  expect_same(merged, whole);
  EXPECT_EQ(merged.stats.candidates, whole.stats.candidates);
  EXPECT_EQ(merged.stats.evaluated, mine[0].stats.evaluated + mine[1].stats.evaluated + mine[2].stats.evaluated);
}

}  // namespace
}  // namespace mpsim::planner
