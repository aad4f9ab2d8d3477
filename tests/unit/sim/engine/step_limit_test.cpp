// A step limit (EngineOptions::step_limit) stops a run as soon as the step is known to pass it, from
// what the run has left (the compute each actor still has to do) or, before the first event, from the
// traffic the program puts on its busiest link direction. Both are lower bounds on the step: the
// random-plan invariants (random_plans_test.cpp) check that a limit at the step never stops a run.
#include <gtest/gtest.h>

#include "engine_test_support.h"

namespace mpsim::engine {
namespace {

using namespace testing;

Prediction simulate_within(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                           TimeNs limit) {
  EngineOptions options;
  options.step_limit = limit;
  return simulate(cluster, model, plan, options);
}

// 1F1B on 4 uniform stages, 8 microbatches of 3 ms forward and 6 ms backward, free links: the step is
// (m + p - 1) 9 ms = 99 ms, and every rank computes 8 x 9 = 72 ms of it.
TEST(StepLimit, RemainingComputeStopsTheRunEarly) {
  const auto cluster = pcie_box(4);
  const auto model = timed_layers(4, "3 ms", "4 ms", "2 ms");
  const auto plan = pipeline_plan(4, 8, "1f1b", cluster, model);
  const Prediction full = simulate(cluster, model, plan);
  ASSERT_EQ(TimeNs::seconds(full.report.step_time_s), TimeNs::ms(99));

  // The first event is rank 0's first forward ending at 3 ms; the other ranks have all their 72 ms
  // still to run: the step lasts at least 75 ms.
  const Prediction under_75 = simulate_within(cluster, model, plan, TimeNs::ms(75) - TimeNs::ns(1));
  EXPECT_TRUE(under_75.exceeded_limit);
  EXPECT_EQ(under_75.events, 1u);
  EXPECT_GT(simulate_within(cluster, model, plan, TimeNs::ms(75)).events, 1u);

  // The last rank starts at 9 ms (three forwards of fill) with 72 ms to run: the step lasts at least
  // 81 ms, known at 9 ms, long before the clock reaches 81 ms.
  const Prediction under_81 = simulate_within(cluster, model, plan, TimeNs::ms(81) - TimeNs::ns(1));
  EXPECT_TRUE(under_81.exceeded_limit);
  EXPECT_LT(under_81.events * 4, full.events);

  EXPECT_TRUE(simulate_within(cluster, model, plan, TimeNs::ms(99) - TimeNs::ns(1)).exceeded_limit);
  EXPECT_FALSE(simulate_within(cluster, model, plan, TimeNs::ms(99)).exceeded_limit);
}

// Two GPUs on an NVSwitch at 100 GB/s per direction reduce 400 MB of fp32 gradients with a ring: each
// sends 2 (n - 1) S / n = 400 MB, so its link to the switch carries 400 MB in the step, 4 ms at least
// (the engine claims a millionth less, for the network's rounding). A limit under that stops the run
// before its first event; at it, the traffic alone does not.
TEST(StepLimit, BusiestLinkStopsTheRunBeforeItStarts) {
  const auto cluster = cluster_yaml(
      "cluster: { gpus_per_node: 2, gpu: a100-80gb, intra_node: { kind: nvswitch, bandwidth: \"100 GB/s\" } }\n");
  const auto model = model_yaml("model:\n  layers:\n    - { name: dense, forward_time: \"100 us\", backward_time: \"200 us\", "
                                "params: 100000000 }\n");
  const auto plan = plan_yaml("parallelism: { data: 2 }\n", cluster, model);
  EngineOptions options;
  options.grad_bucket = Bytes::gb(1);
  const Prediction full = simulate(cluster, model, plan, options);
  ASSERT_GT(TimeNs::seconds(full.report.step_time_s), TimeNs::ms(4));

  options.step_limit = TimeNs::ms(4) - TimeNs::us(5);
  const Prediction under = simulate(cluster, model, plan, options);
  EXPECT_TRUE(under.exceeded_limit);
  EXPECT_EQ(under.events, 0u);
  options.step_limit = TimeNs::ms(4);
  EXPECT_GT(simulate(cluster, model, plan, options).events, 0u);
}

}  // namespace
}  // namespace mpsim::engine
