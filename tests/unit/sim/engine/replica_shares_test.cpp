// Uneven batch shares across data-parallel replicas: each replica runs its own microbatches, the
// gradient sync waits for the slowest, and each replica holds its own in-flight activations. Closed
// forms on layers with profiled times, replica 1's GPUs made `kSlow` times slower (a GPU's slowdown).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "engine_test_support.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/trace/trace_json.h"

namespace mpsim::engine::replica_shares_test {
namespace {

using testing::cluster_yaml;
using testing::plan_yaml;
using testing::timed_layers;

constexpr double kSlow = 3.0;
constexpr std::int64_t kMs = 1'000'000;

/// `gpus` GPUs on one PCIe switch whose transfers cost nothing (no latency; the layers send no bytes);
/// the GPUs of data-parallel replica 1 (the second half: placement tp-pp-dp) `kSlow` times slower.
topology::Cluster box_with_slow_replica(int gpus) {
  topology::Cluster c = cluster_yaml(fmt::format(
      "cluster: {{ gpus_per_node: {}, gpu: a100-80gb, intra_node: {{ kind: pcie, bandwidth: \"10 GB/s\", latency: \"0 us\" }} }}\n",
      gpus));
  for (int g = gpus / 2; g < gpus; ++g) c.set_slowdown(c.gpus().at(static_cast<std::size_t>(g)), kSlow);
  return c;
}

/// Layers of 1 ms forward and 1 + 1 ms backward, no parameters (nothing to reduce or step), each stashing
/// `stash` bytes per microbatch.
model::Model layers(int count, long stash = 0) { return timed_layers(count, "1 ms", "1 ms", "1 ms", 0, stash); }

plan::Plan data_plan(int pipeline, int microbatches, const std::string& shares, const topology::Cluster& c,
                     const model::Model& m, const std::string& schedule = "1f1b") {
  return plan_yaml(fmt::format("parallelism: {{ pipeline: {}, data: 2 }}\nbatch: {{ microbatches: {} }}\nschedule: {}\n"
                               "placement: tp-pp-dp\n{}",
                               pipeline, microbatches, schedule, shares.empty() ? "" : "replica_microbatches: " + shares + "\n"),
                   c, m);
}

std::int64_t step_ns(const topology::Cluster& c, const model::Model& m, const plan::Plan& p, bool fold = true) {
  EngineOptions options;
  options.fold_replicas = fold;
  return TimeNs::seconds(simulate(c, m, p, options).report.step_time_s).base();
}

TEST(ReplicaShares, OneStageTheStepIsTheSlowestReplicasMicrobatches) {
  // Pipeline 1: a replica's step is n x (f + b) = n x 3 ms, replica 1's x 3. Shares s0 : s1 = 3 : 1.
  const topology::Cluster c = box_with_slow_replica(2);
  const model::Model m = layers(1);
  const std::int64_t t0 = 3 * kMs;
  const std::int64_t t1 = static_cast<std::int64_t>(kSlow) * t0;
  struct Case {
    std::string shares;
    int n0, n1;
  };
  for (const Case& k : {Case{"", 4, 4}, Case{"[6, 2]", 6, 2}, Case{"[7, 1]", 7, 1}, Case{"[5, 3]", 5, 3}}) {
    const plan::Plan p = data_plan(1, 4, k.shares, c, m);
    const std::int64_t expected = std::max(k.n0 * t0, k.n1 * t1);
    EXPECT_NEAR(step_ns(c, m, p), expected, 10) << k.shares;
    EXPECT_NEAR(step_ns(c, m, p, false), expected, 10) << k.shares << " unfolded";
  }
  // The shares that equalise the replicas (6 x 3 = 2 x 9 ms) against even shares: 36 - 18 ms shorter.
  EXPECT_NEAR(step_ns(c, m, data_plan(1, 4, "", c, m)) - step_ns(c, m, data_plan(1, 4, "[6, 2]", c, m)),
              4 * t1 - 6 * t0, 20);
}

TEST(ReplicaShares, TwoStagesEachReplicaFillsAndDrainsItsOwnPipeline) {
  // Pipeline 2 x data 2, one layer a stage, 1F1B: a replica of n microbatches takes (n + p - 1)(f + b).
  const topology::Cluster c = box_with_slow_replica(4);
  const model::Model m = layers(2);
  const std::int64_t fb0 = 3 * kMs;
  const std::int64_t fb1 = static_cast<std::int64_t>(kSlow) * fb0;
  struct Case {
    std::string shares;
    int n0, n1;
  };
  for (const Case& k : {Case{"", 6, 6}, Case{"[9, 3]", 9, 3}, Case{"[10, 2]", 10, 2}}) {
    const plan::Plan p = data_plan(2, 6, k.shares, c, m);
    const std::int64_t expected = std::max((k.n0 + 1) * fb0, (k.n1 + 1) * fb1);
    EXPECT_NEAR(step_ns(c, m, p), expected, 20) << k.shares;
    EXPECT_NEAR(step_ns(c, m, p, false), expected, 20) << k.shares << " unfolded";
  }
}

TEST(ReplicaShares, EachReplicaHoldsItsOwnMicrobatchesActivations) {
  // GPipe on one stage stashes every microbatch before the first backward: a replica of n holds n stashes.
  const topology::Cluster c = box_with_slow_replica(2);
  const long stash = 1L << 30;
  const model::Model m = layers(1, stash);
  const trace::Report r = simulate(c, m, data_plan(1, 4, "[6, 2]", c, m, "gpipe")).report;
  ASSERT_EQ(r.devices.size(), 2U);
  EXPECT_EQ(r.devices[0].peak_memory_bytes - r.devices[1].peak_memory_bytes, 4 * stash);
  const trace::Report even = simulate(c, m, data_plan(1, 4, "", c, m, "gpipe")).report;
  EXPECT_EQ(r.devices[0].peak_memory_bytes - even.devices[0].peak_memory_bytes, 2 * stash);
}

TEST(ReplicaShares, TheReportShowsEachClassOfReplicas) {
  // Pipeline 2 x data 2, GPipe, one layer a stage, replica 1 kSlow times slower: shares 10 and 2 make two
  // classes. A class's stage is busy n (f + b); the step is the slower replica's (n + p - 1)(f + b); a
  // GPipe stage holds all n stashes, so the classes' peaks at a stage differ by (10 - 2) stashes.
  const topology::Cluster c = box_with_slow_replica(4);
  const long stash = 1L << 30;
  const model::Model m = layers(2, stash);
  const trace::Report r = simulate(c, m, data_plan(2, 6, "[10, 2]", c, m, "gpipe")).report;
  const std::int64_t fb0 = 3 * kMs;
  const std::int64_t fb1 = static_cast<std::int64_t>(kSlow) * fb0;
  const double step = static_cast<double>(std::max(11 * fb0, 3 * fb1)) * 1e-9;
  EXPECT_NEAR(r.step_time_s, step, 20e-9);
  ASSERT_EQ(r.replica_classes.size(), 2U);
  const trace::ReplicaClassReport& fast = r.replica_classes[0];
  const trace::ReplicaClassReport& slow = r.replica_classes[1];
  EXPECT_EQ(fast.replicas, std::vector<int>{0});
  EXPECT_EQ(slow.replicas, std::vector<int>{1});
  EXPECT_EQ(fast.microbatches, 10);
  EXPECT_EQ(slow.microbatches, 2);
  EXPECT_EQ(fast.gpus_per_stage, 1);
  EXPECT_EQ(fast.gpu_kinds, (std::vector<std::string>{"a100-80gb", "a100-80gb"}));
  ASSERT_EQ(fast.stages.size(), 2U);
  ASSERT_EQ(slow.stages.size(), 2U);
  const plan::Plan p = data_plan(2, 6, "[10, 2]", c, m, "gpipe");
  const plan::Layout layout(p);
  for (int s = 0; s < 2; ++s) {
    const trace::DeviceReport& f = fast.stages[static_cast<std::size_t>(s)];
    const trace::DeviceReport& w = slow.stages[static_cast<std::size_t>(s)];
    EXPECT_EQ(f.stage, s);
    EXPECT_EQ(w.stage, s);
    // The first GPU of replica d at stage s.
    const int first = layout.with(0, plan::Axis::Pipeline, s);
    EXPECT_EQ(f.id, r.devices[static_cast<std::size_t>(layout.with(first, plan::Axis::Data, 0))].id);
    EXPECT_EQ(w.id, r.devices[static_cast<std::size_t>(layout.with(first, plan::Axis::Data, 1))].id);
    EXPECT_NE(f.id, w.id);
    EXPECT_NEAR(f.busy_s, static_cast<double>(10 * fb0) * 1e-9, 20e-9) << s;
    EXPECT_NEAR(w.busy_s, static_cast<double>(2 * fb1) * 1e-9, 20e-9) << s;
    EXPECT_NEAR(f.idle_s, r.step_time_s - f.busy_s, 1e-12);
    EXPECT_NEAR(w.bubble_fraction, w.idle_s / r.step_time_s, 1e-12);
    EXPECT_EQ(f.peak_memory_bytes - w.peak_memory_bytes, 8 * stash) << s;
  }
  // The JSON carries the same figures; a report whose replicas run alike has no classes, and its JSON no key.
  const nlohmann::ordered_json j = trace::report_json(r);
  ASSERT_TRUE(j.contains("replica_classes"));
  EXPECT_EQ(j["replica_classes"][0]["microbatches"], 10);
  EXPECT_EQ(j["replica_classes"][1]["replicas"], nlohmann::ordered_json::parse("[1]"));
  EXPECT_EQ(j["replica_classes"][1]["stages"][1]["busy_s"].get<double>(), slow.stages[1].busy_s);
  EXPECT_EQ(j["replica_classes"][0]["stages"][0]["gpu_kind"], "a100-80gb");
  EXPECT_EQ(j["replica_classes"][0]["stages"][0]["gpus"], 1);
  const trace::Report alike = simulate(c, m, data_plan(2, 6, "", c, m, "gpipe")).report;
  EXPECT_TRUE(alike.replica_classes.empty());
  EXPECT_FALSE(trace::report_json(alike).contains("replica_classes"));
}

TEST(ReplicaShares, EvenSharesGivenAreTheEvenRun) {
  const topology::Cluster c = box_with_slow_replica(4);
  const model::Model m = layers(2);
  const trace::Report a = simulate(c, m, data_plan(2, 6, "", c, m)).report;
  const trace::Report b = simulate(c, m, data_plan(2, 6, "[6, 6]", c, m)).report;
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  // The same report but for the plan it embeds, which states the shares as given.
  nlohmann::ordered_json ja = trace::report_json(a), jb = trace::report_json(b);
  EXPECT_EQ(jb["plan"]["replica_microbatches"], nlohmann::ordered_json::parse("[6, 6]"));
  ja.erase("plan");
  jb.erase("plan");
  EXPECT_EQ(ja.dump(), jb.dump());
}

}  // namespace
}  // namespace mpsim::engine::replica_shares_test
