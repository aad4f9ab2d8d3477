// --optimize cost: the job sizes tried, the choice of the fewest GPU-hours within the deadline, and the
// search end to end: each size's best is the planner's own, its run the estimate of its step.
#include "planner/cost_search.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sim/engine/training_step.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::shipped_model;
using testing::short_cluster;

TEST(CostSearch, JobSizesAreWholeNodesInPowersOfTwoAndTheCluster) {
  EXPECT_EQ(cost_job_sizes(32, 4, std::nullopt), (std::vector<int>{8, 16, 32}));
  EXPECT_EQ(cost_job_sizes(24, 3, std::nullopt), (std::vector<int>{8, 16, 24}));
  EXPECT_EQ(cost_job_sizes(80, 10, std::nullopt), (std::vector<int>{8, 16, 32, 64, 80}));
  EXPECT_EQ(cost_job_sizes(8, 1, std::nullopt), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(cost_job_sizes(6, 1, std::nullopt), (std::vector<int>{1, 2, 4, 6}));
  EXPECT_EQ(cost_job_sizes(6, 0, std::nullopt), (std::vector<int>{1, 2, 4, 6}));  // no node count: one node
  EXPECT_EQ(cost_job_sizes(32, 4, 12), (std::vector<int>{12}));
}

JobSizeResult size_with_run(int gpus, double gpu_hours, double days) {
  JobSizeResult s;
  s.gpus = gpus;
  s.run = training::TrainingEstimate{};
  s.run->gpu_hours = gpu_hours;
  s.run->wall_time = TimeNs::seconds(days * 86400);
  return s;
}

TEST(CostSearch, CheapestIsTheFewestGpuHoursThatEndsByTheDeadline) {
  JobSizeResult no_plan;
  no_plan.gpus = 4;
  const std::vector<JobSizeResult> sizes{no_plan, size_with_run(8, 900, 40), size_with_run(16, 1000, 20),
                                         size_with_run(32, 900, 10), size_with_run(64, 1200, 5)};
  EXPECT_EQ(cheapest_job_size(sizes, std::nullopt), 1U);  // the first of equals
  EXPECT_EQ(cheapest_job_size(sizes, TimeNs::seconds(30 * 86400)), 3U);
  EXPECT_EQ(cheapest_job_size(sizes, TimeNs::seconds(10 * 86400)), 3U);  // ending on the deadline is in time
  EXPECT_EQ(cheapest_job_size(sizes, TimeNs::seconds(8 * 86400)), 4U);
  EXPECT_EQ(cheapest_job_size(sizes, TimeNs::seconds(86400)), std::nullopt);
  EXPECT_EQ(cheapest_job_size({no_plan}, std::nullopt), std::nullopt);
}

PlannerOptions small_options() {
  PlannerOptions options;
  options.space.global_batch = 16;
  options.space.schedules = {plan::ScheduleKind::OneFOneB};
  options.space.recompute = {model::Recompute::None};
  options.exact_pareto = false;
  options.top = 1;
  return options;
}

TEST(CostSearch, EachSizeIsThePlannersBestAndItsRun) {
  const model::Model model = shipped_model("gpt3-1.3b");
  const auto search_of = [&](int gpus) { return JobSearch{short_cluster(gpus / 4, 4), model, small_options()}; };
  training::TrainingRequest request;
  request.tokens = "10B";
  const std::vector<int> sizes = cost_job_sizes(8, 2, std::nullopt);
  const CostSearchResult found = run_cost_search(sizes, search_of, request, std::nullopt);
  ASSERT_EQ(found.sizes.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const JobSizeResult& s = found.sizes[i];
    EXPECT_EQ(s.gpus, sizes[i]);
    const JobSearch job = search_of(sizes[i]);
    const PlannerResult alone = run_planner(job.cluster, job.model, job.options);
    ASSERT_FALSE(alone.ranked.empty());
    ASSERT_TRUE(s.best.has_value() && s.run.has_value());
    EXPECT_EQ(s.best->id, alone.ranked.front().id);
    EXPECT_EQ(s.best->plan, alone.ranked.front().plan);
    const auto run = training::estimate_request(
        request, engine::training_step(job.cluster, job.model, s.best->plan, s.best->report));
    EXPECT_EQ(s.run->steps, run->steps);
    EXPECT_DOUBLE_EQ(s.run->gpu_hours, run->gpu_hours);
  }
  ASSERT_TRUE(found.chosen.has_value());
  EXPECT_EQ(found.chosen, cheapest_job_size(found.sizes, std::nullopt));
  // A deadline before the quickest run leaves nothing to choose.
  TimeNs quickest = found.sizes.front().run->wall_time;
  for (const JobSizeResult& s : found.sizes) quickest = std::min(quickest, s.run->wall_time);
  EXPECT_FALSE(run_cost_search(sizes, search_of, request, quickest - TimeNs::seconds(1)).chosen.has_value());
}

}  // namespace
}  // namespace mpsim::planner
