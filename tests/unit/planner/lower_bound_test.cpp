// The step-time lower bound: its closed form, its tightness without communication, and the property
// the branch and bound relies on: bound <= simulated step time, for every schedule kind.
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "planner/lower_bound.h"
#include "planner/search.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using namespace mpsim::literals;

schedule::PipelineShape pipeline_shape(int p, int m, plan::ScheduleKind kind, int v = 1) {
  schedule::PipelineShape s;
  s.stages = p;
  s.microbatches = m;
  s.chunks = v;
  s.kind = kind;
  s.microbatch_group_size = p;
  s.active_microbatches = p + 2;
  return s;
}

TEST(LowerBound, UniformOneFOneBIsFillBusyDrain) {
  const std::vector<StageTimes> stages(4, StageTimes{2_ms, 4_ms, 3_ms, 1_ms});
  // (m + p - 1)(f + b)
  EXPECT_EQ(step_time_lower_bound(pipeline_shape(4, 8, plan::ScheduleKind::OneFOneB), stages), TimeNs::ms(11 * 6));
  EXPECT_EQ(step_time_lower_bound(pipeline_shape(4, 8, plan::ScheduleKind::GPipe), stages), TimeNs::ms(11 * 6));
  // Zero bubble: no drain of W; the last rank's busy time m (f + b) plus the fill, or the I drain.
  EXPECT_EQ(step_time_lower_bound(pipeline_shape(4, 8, plan::ScheduleKind::ZbH1), stages),
            std::max(TimeNs::ms(3 * 2 + 8 * 6), TimeNs::ms(3 * 2 + 8 * 5 + 3 * 3 + 1)));
}

TEST(LowerBound, InterleavedCountsEveryChunkOfARank) {
  // p = 2, v = 2: virtual stages 0, 1 on ranks 0, 1 (chunk 0) and 2, 3 (chunk 1).
  const std::vector<StageTimes> stages{{1_ms, 2_ms, 1_ms, 1_ms}, {1_ms, 2_ms, 1_ms, 1_ms},
                                       {3_ms, 6_ms, 3_ms, 3_ms}, {1_ms, 2_ms, 1_ms, 1_ms}};
  // Rank 0: m (1 + 2 + 3 + 6) = 4 * 12; rank 1: fill 1 + m (1 + 2 + 1 + 2) + drain 2.
  EXPECT_EQ(step_time_lower_bound(pipeline_shape(2, 4, plan::ScheduleKind::Interleaved1F1B, 2), stages), TimeNs::ms(48));
}

TEST(LowerBound, TightWithoutCommunication) {
  // Identical profiled layers, nothing to send, nothing to reduce: 1F1B and GPipe run exactly (m + p - 1)(f + b).
  const auto cluster = engine::testing::pcie_box(4, "10 GB/s", "0 us");
  const auto model = engine::testing::timed_layers(8, "2 ms", "3 ms", "1 ms");
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const auto plan = engine::testing::plan_yaml(
        fmt::format("parallelism: {{ pipeline: 4, data: 1 }}\nbatch: {{ micro: 1, microbatches: 8 }}\n"
                    "schedule: {}\n",
                    schedule),
        cluster, model);
    const auto prediction = engine::simulate(cluster, model, plan);
    EXPECT_EQ(TimeNs::seconds(prediction.report.step_time_s), TimeNs::ms((8 + 3) * 12)) << schedule;
    const plan::Layout layout(plan);
    const auto costs = engine::build_cost_model(cluster, model, plan, layout);
    std::vector<StageTimes> stages;
    for (int r = 0; r < 4; ++r) {
      const auto& c = costs.chunk(r, 0);
      stages.push_back({c.forward, c.backward, c.backward_input, c.backward_weight});
    }
    EXPECT_EQ(step_time_lower_bound(schedule::shape_of(plan), stages), TimeNs::ms((8 + 3) * 12)) << schedule;
  }
}

/// Checks bound <= simulated for up to `samples` candidates of the space, spread over it.
int check_bounds(const topology::Cluster& cluster, const model::Model& model, int global_batch, std::mt19937& rng,
                 int samples, const std::vector<plan::ScheduleKind>& schedules = {},
                 plan::MoeDispatcher dispatcher = plan::MoeDispatcher::AllToAll) {
  PlannerOptions options;
  options.space.global_batch = global_batch;
  options.space.schedules = schedules;
  options.space.dispatcher = dispatcher;
  const auto prepared = prepare_candidates(cluster, model, options);
  const Bytes capacity = gpu_capacity(cluster);
  std::vector<const Prepared*> usable;
  for (const Prepared& p : prepared) {
    if (p.estimate.peak_memory <= capacity) usable.push_back(&p);
  }
  std::shuffle(usable.begin(), usable.end(), rng);
  int checked = 0;
  for (const Prepared* p : usable) {
    if (checked >= samples) break;
    const plan::Plan plan = plan::resolve_plan(p->spec, cluster, model);
    const auto prediction = engine::simulate(cluster, model, plan);
    const TimeNs simulated = TimeNs::seconds(prediction.report.step_time_s);
    EXPECT_GT(p->estimate.lower_bound, TimeNs{}) << "candidate " << p->id;
    EXPECT_LE(p->estimate.lower_bound, simulated)
        << model.name << " candidate " << p->id << " " << plan::to_string(plan.schedule) << " t"
        << plan.degrees[plan::Axis::Tensor] << " p" << plan.degrees[plan::Axis::Pipeline] << " v" << plan.virtual_stages
        << " m" << plan.microbatches;
    // The bound from the plan's exact chunk times too.
    const plan::Layout layout(plan);
    const auto costs = engine::build_cost_model(cluster, model, plan, layout);
    std::vector<StageTimes> stages(static_cast<std::size_t>(plan.stages()));
    for (int r = 0; r < plan.degrees[plan::Axis::Pipeline]; ++r) {
      for (int c = 0; c < plan.virtual_stages; ++c) {
        const auto& cc = costs.chunk(r, c);
        const auto vs =
            static_cast<std::size_t>(plan::virtual_stage_of(plan.schedule, plan.degrees[plan::Axis::Pipeline], r, c));
        stages[vs] = {cc.forward, cc.backward, cc.backward_input, cc.backward_weight};
      }
    }
    // The bound of the exact chunk times alone (no gradient reduction): below the simulation, and
    // never more than the planner's bound plus the rounding slack of its unit sums.
    const TimeNs exact = step_time_lower_bound(schedule::shape_of(plan), stages);
    EXPECT_LE(exact, simulated) << "candidate " << p->id;
    ++checked;
  }
  return checked;
}

TEST(LowerBound, GradientReductionRaisesTheBound) {
  // Pure data parallelism over two nodes: the step is compute plus an all-reduce nothing hides.
  const auto cluster = testing::short_cluster(2, 4, "a100-80gb", "100 Gb/s");
  const auto model = testing::shipped_model("bert-large");
  PlannerOptions options;
  options.space.global_batch = 64;
  options.space.schedules = {plan::ScheduleKind::OneFOneB};
  options.space.recompute = {model::Recompute::None};
  options.space.zero = {0, 1};  // ZeRO 3 reduces per layer, during the passes
  const auto with_sync = prepare_candidates(cluster, model, options);
  // The same candidates where the reduction costs next to nothing.
  const auto without = prepare_candidates(testing::short_cluster(2, 4, "a100-80gb", "1000 Tb/s", "1000 TB/s"), model, options);
  // Pure data-parallel candidates (one stage, so one partition each) by what tells them apart.
  const auto key = [](const plan::PlanSpec& s) {
    return std::make_tuple(s.micro_batch, s.zero, s.placement, s.overlap_grad_reduce, s.overlap_param_gather);
  };
  std::map<decltype(key(plan::PlanSpec{})), TimeNs> compute_only_of;
  for (const Prepared& p : without) {
    if (p.spec.degrees[plan::Axis::Tensor] == 1 && p.spec.degrees[plan::Axis::Pipeline] == 1)
      compute_only_of[key(p.spec)] = p.estimate.lower_bound;
  }
  int pure_data = 0;
  for (const Prepared& p : with_sync) {
    if (p.spec.degrees[plan::Axis::Tensor] != 1 || p.spec.degrees[plan::Axis::Pipeline] != 1) continue;
    ++pure_data;
    const auto simulated = engine::simulate(cluster, model, plan::resolve_plan(p.spec, cluster, model)).report.step_time_s;
    ASSERT_TRUE(compute_only_of.contains(key(p.spec)));
    const TimeNs compute_only = compute_only_of.at(key(p.spec));
    EXPECT_GT(p.estimate.lower_bound, compute_only);
    EXPECT_LE(p.estimate.lower_bound, TimeNs::seconds(simulated));
    // Most of the reduction is accounted for.
    EXPECT_GT(TimeNs(p.estimate.lower_bound - compute_only).to_seconds(), 0.5 * (simulated - compute_only.to_seconds()))
        << "zero " << p.spec.zero << " micro batch " << p.spec.micro_batch;
  }
  EXPECT_GT(pure_data, 0);
}

TEST(LowerBound, NeverAboveTheSimulatedStepTime) {
  std::mt19937 rng(2024);
  int checked = 0;
  for (int trial = 0; trial < 12; ++trial) {
    const int layers = std::uniform_int_distribution<int>(2, 10)(rng);
    const auto model = testing::random_timed_model(rng, layers);
    const int gpus = trial % 2 == 0 ? 4 : 8;
    const auto cluster = trial % 3 == 0   ? engine::testing::pcie_box(gpus, "5 GB/s", "3 us")
                         : trial % 3 == 1 ? testing::short_cluster(gpus / 2, 2, "a100-80gb", "25 Gb/s")
                                          : testing::short_cluster(2, gpus / 2);
    checked += check_bounds(cluster, model, 8 * std::uniform_int_distribution<int>(1, 3)(rng), rng, 20);
  }
  checked += check_bounds(testing::short_cluster(2, 4), testing::shipped_model("gpt3-1.3b"), 32, rng, 40);
  checked += check_bounds(testing::short_cluster(1, 8), testing::shipped_model("bert-large"), 64, rng, 30);
  // Expert, context, ZeRO 3 and overlap candidates: all-to-alls, K/V and weight gathers in the bound.
  checked += check_bounds(testing::short_cluster(2, 4, "h100-sxm5-80gb", "400 Gb/s"), testing::small_moe(), 16, rng, 60);
  // The flex dispatcher's token exchanges (once per node, then once per GPU).
  checked += check_bounds(testing::short_cluster(2, 4, "h100-sxm5-80gb", "400 Gb/s"), testing::small_moe(), 16, rng, 30,
                          {}, plan::MoeDispatcher::DeepEp);
  checked += check_bounds(testing::short_cluster(2, 4, "h100-sxm5-80gb", "400 Gb/s"), testing::long_sequence(), 8, rng, 40);
  // DualPipe, searched only when named: both directions' fills and drains, the mirrored reductions.
  const std::vector<plan::ScheduleKind> dualpipe{plan::ScheduleKind::DualPipe};
  const int dualpipe_checked =
      check_bounds(testing::short_cluster(2, 4), testing::shipped_model("gpt3-1.3b"), 32, rng, 30, dualpipe) +
      check_bounds(testing::short_cluster(2, 4, "h100-sxm5-80gb", "400 Gb/s"), testing::small_moe(), 16, rng, 30, dualpipe);
  EXPECT_GE(dualpipe_checked, 40);
  checked += dualpipe_checked;
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace mpsim::planner
