// Peak memory without simulating: the planner's estimate equals the simulator's peak for every schedule
// kind, recomputation policy and ZeRO stage; the in-flight counts are the schedules' known ones.
#include <algorithm>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "planner/memory_model.h"
#include "planner/search.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"
#include "sim/schedule/passes.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::short_cluster;
using testing::shipped_model;

int max_forwarded(const CountVectors& vectors, int chunks) {
  int most = 0;
  for (const auto& v : vectors) {
    int x = 0;
    for (int c = 0; c < chunks; ++c) x += v[static_cast<std::size_t>(c)];
    most = std::max(most, x);
  }
  return most;
}

schedule::PipelineShape shape(int p, int m, plan::ScheduleKind kind, int v = 1) {
  schedule::PipelineShape s;
  s.stages = p;
  s.microbatches = m;
  s.chunks = v;
  s.kind = kind;
  s.microbatch_group_size = p;
  s.active_microbatches = p + 2;
  return s;
}

TEST(InFlight, KnownCountsPerSchedule) {
  using plan::ScheduleKind;
  for (const int p : {1, 2, 4, 5}) {
    for (const int m : {1, 3, 8, 12}) {
      const auto one_f = in_flight_vectors(shape(p, m, ScheduleKind::OneFOneB));
      const auto gpipe = in_flight_vectors(shape(p, m, ScheduleKind::GPipe));
      const auto zb1 = in_flight_vectors(shape(p, m, ScheduleKind::ZbH1));
      const auto zb2 = in_flight_vectors(shape(p, m, ScheduleKind::ZbH2));
      const auto sm = in_flight_vectors(shape(p, m, ScheduleKind::SageMakerInterleaved));
      for (int i = 0; i < p; ++i) {
        const auto r = static_cast<std::size_t>(i);
        EXPECT_EQ(max_forwarded(one_f[r], 1), std::min(p - i, m)) << "1f1b p " << p << " m " << m << " rank " << i;
        EXPECT_EQ(max_forwarded(gpipe[r], 1), m);
        EXPECT_EQ(max_forwarded(zb1[r], 1), std::min(p - i, m));
        EXPECT_EQ(max_forwarded(zb2[r], 1), std::min(2 * (p - i) - 1, m));
        EXPECT_LE(max_forwarded(sm[r], 1), std::min(p + 2, m));
      }
      // With p = 1 a backward is ready as soon as its forward ends, and backward comes first.
      if (p > 1) {
        EXPECT_EQ(max_forwarded(sm[0], 1), std::min(p + 2, m)) << "p " << p << " m " << m;
      }
    }
  }
}

TEST(StaticMemory, AsTheCostModelCountsIt) {
  const auto cluster = short_cluster(2, 4);
  const auto model = shipped_model("gpt3-1.3b");
  for (const int zero : {0, 1, 2, 3}) {
    for (const int pipeline : {1, 2, 4}) {
      plan::PlanSpec spec;
      spec.write(plan::Axis::Tensor, 2);
      spec.write(plan::Axis::Pipeline, pipeline);
      spec.global_batch = 16;
      spec.zero = zero;
      spec.grad_reduce_in_fp32 = pipeline != 2;  // both gradient formats
      spec.partition = plan::even_partition(24, pipeline);
      if (pipeline > 1) spec.partition[1] += 1;  // uneven on purpose
      const plan::Plan p = plan::resolve_plan(spec, cluster, model);
      const plan::Layout layout(p);
      const auto costs = engine::build_cost_model(cluster, model, p, layout);
      // The gradient buckets the executor sizes its collectives from are the cost model's.
      const auto gradient_bytes = schedule::chunk_gradient_split(model, p).dense;
      for (std::size_t r = 0; r < costs.ranks.size(); ++r) {
        for (std::size_t c = 0; c < costs.ranks[r].chunks.size(); ++c) {
          EXPECT_EQ(gradient_bytes[r][c], costs.ranks[r].chunks[c].gradient_bytes) << "rank " << r << " chunk " << c;
        }
      }
      for (const auto& rank : costs.ranks) {
        engine::RankParameters parameters;
        for (const auto& c : rank.chunks) {
          parameters.total += c.parameters;
          parameters.fp8 += c.fp8_parameters;
          parameters.expert += c.expert_parameters;
          parameters.largest_layer = std::max(parameters.largest_layer, c.largest_layer_parameters);
        }
        EXPECT_EQ(engine::static_memory(parameters, engine::state_format(p, model.dtype_bytes)).total(),
                  rank.static_memory.total())
            << "zero " << zero << " pipeline " << pipeline;
      }
    }
  }
}

struct MemoryCase {
  const char* name;
  topology::Cluster cluster;
  model::Model model;
  int global_batch;
};

/// A sample of every (schedule, recompute, ZeRO) combination the space has, simulated.
void expect_estimates_equal_simulation(const MemoryCase& c, int per_combination) {
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  const auto prepared = prepare_candidates(c.cluster, c.model, options);
  const Bytes capacity = gpu_capacity(c.cluster);
  std::map<std::tuple<plan::ScheduleKind, model::Recompute, int>, int> seen;
  int checked = 0;
  for (const Prepared& p : prepared) {
    if (p.estimate.peak_memory > capacity) continue;  // estimated only up to the static part
    int& n = seen[{p.spec.schedule, p.spec.recompute, p.spec.zero}];
    if (n >= per_combination || (p.id % 7) != 0) continue;
    ++n;
    const plan::Plan plan = plan::resolve_plan(p.spec, c.cluster, c.model);
    const auto prediction = engine::simulate(c.cluster, c.model, plan);
    EXPECT_EQ(p.estimate.peak_memory.count(), prediction.report.peak_memory_bytes)
        << c.name << ": candidate " << p.id << " " << plan::to_string(plan.schedule) << " t"
        << plan.degrees[plan::Axis::Tensor] << " p" << plan.degrees[plan::Axis::Pipeline] << " d"
        << plan.degrees[plan::Axis::Data] << " v" << plan.virtual_stages << " mb" << plan.micro_batch << " m"
        << plan.microbatches << " " << model::to_string(plan.recompute) << " zero " << plan.zero;
    ++checked;
  }
  EXPECT_GT(checked, 20) << c.name;
}

TEST(MemoryEstimate, EqualsTheSimulatedPeak) {
  expect_estimates_equal_simulation({"2x4 A100, gpt3-1.3b", short_cluster(2, 4), shipped_model("gpt3-1.3b"), 32}, 3);
  expect_estimates_equal_simulation({"1x8 A100, t5-3b", short_cluster(1, 8), shipped_model("t5-3b"), 16}, 2);
  expect_estimates_equal_simulation({"2x4 H100, small MoE", short_cluster(2, 4, "h100-sxm5-80gb"), testing::small_moe(), 16}, 2);
  expect_estimates_equal_simulation({"2x4 H100, 16k tokens", short_cluster(2, 4, "h100-sxm5-80gb"), testing::long_sequence(), 8}, 2);
  std::mt19937 rng(11);
  expect_estimates_equal_simulation(
      {"pcie box, random timed layers", engine::testing::pcie_box(4), testing::random_timed_model(rng, 8), 16}, 3);
}

}  // namespace
}  // namespace mpsim::planner
