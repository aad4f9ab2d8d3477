// A plan's step as a distribution (planner/step_distribution.h) against the order statistics of
// synchronous data parallelism, and its determinism.
//
// The closed form. One pipeline stage, every GPU a data-parallel replica, the gradient all-reduce after
// the backward pass (not overlapped): every replica computes, then all of them reduce. The all-reduce
// starts when the slowest replica is done, so with per-GPU time multipliers m_i a step lasts
//   step = max_i(m_i) C + A,
// C the compute of the unsampled step (forward, backward, optimizer: every pass the multiplier scales)
// and A its all-reduce (the engine folds the replicas into one actor that goes at the slowest member's
// pace, simulator.h). The test first checks that premise: with every GPU at one multiplier m the step
// is m C + A, C and A taken from the runs at m = 1 and m = 2.
// With m_i = exp(σ z_i), z_i iid standard normal, max_i m_i = exp(σ max_i z_i), and the q-quantile of
// the max of n iid variables is the (q^(1/n))-quantile of one (P(max <= x) = P(z <= x)^n). So
//   Q_q(step) = C exp(σ Φ⁻¹(q^(1/n))) + A.
// For n = 1024: q^(1/n) is 0.99933 at q = 0.5 (Φ⁻¹ = 3.21) and 0.99995 at 0.95 (Φ⁻¹ = 3.89).
#include "planner/step_distribution.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/core/random_stream.h"
#include "sim/core/yaml_field.h"
#include "sim/topology/route_table.h"
#include "tests/unit/sim/engine/engine_test_support.h"

namespace mpsim::planner {
namespace {

using engine::testing::model_yaml;
using engine::testing::plan_yaml;
using engine::testing::repo_path;

/// 128 DGX H100 (1024 GPUs), the shipped topology scaled as `--set topology.nodes=128` scales it.
topology::Cluster dgx_h100_nodes(int nodes) {
  YamlDocument doc = YamlDocument::load(repo_path("topologies/dgx-h100.yaml"));
  doc.apply(Override{"topology", "nodes", std::to_string(nodes), "test"});
  return topology::build_cluster(topology::load_topology_spec(doc.root()));
}

/// One layer of profiled times and 64 Mi parameters: a small step whose all-reduce is a visible part.
model::Model one_layer() {
  return model_yaml(
      "model:\n  layers:\n"
      "    - { name: dense, forward_time: \"10 ms\", backward_time: \"20 ms\", params: 67108864 }\n");
}

double step_with_every_gpu_at(topology::Cluster cluster, const model::Model& model, const plan::Plan& plan, double m) {
  for (const topology::DeviceId gpu : cluster.gpus()) cluster.set_slowdown(gpu, m);
  return engine::simulate(cluster, model, plan).report.step_time_s;
}

/// The q-quantile of max_i exp(σ z_i) over n GPUs.
double max_multiplier_quantile(double sigma, double q, double n) {
  return std::exp(sigma * standard_normal_quantile(std::pow(q, 1.0 / n)));
}

// The acceptance: a 1024-GPU data-parallel job with a per-GPU spread of 5 %. The sampled p95 and p50
// agree with the closed form within 2 %. Sampling error: over N = 200 steps the p95 estimate's standard
// error is sqrt(q (1 - q) / N) / f(z_q) in z, with f the density of the max of 1024 normals at its
// 0.95-quantile, n φ(3.89) 0.95 = 0.20: 1.08 / sqrt(200) = 0.077, so 0.05 x 0.077 = 0.38 % of the
// compute (less of the step): the 2 % tolerance is about five standard errors. The p50's is three
// times smaller (density 1.2 at its quantile, sqrt(0.25) / 1.2 / sqrt(200) = 0.029 in z).
TEST(StepDistribution, SynchronousDataParallelMatchesTheMaxOfLognormals) {
  const topology::Cluster cluster = dgx_h100_nodes(128);
  ASSERT_EQ(cluster.gpus().size(), 1024U);
  const model::Model model = one_layer();
  const plan::Plan plan = plan_yaml("parallelism: { data: 1024 }\nbatch: { global: 1024, micro: 1 }\n", cluster, model);
  const double s1 = step_with_every_gpu_at(cluster, model, plan, 1.0);
  const double s2 = step_with_every_gpu_at(cluster, model, plan, 2.0);
  const double compute = s2 - s1;
  const double allreduce = 2 * s1 - s2;
  ASSERT_GT(allreduce, 0.05 * s1);  // the all-reduce is a visible part of the step
  EXPECT_NEAR(step_with_every_gpu_at(cluster, model, plan, 1.5), 1.5 * compute + allreduce, 1e-6 * s1);

  const double sigma = 0.05;
  variability::SamplingRequest request;
  request.samples = 200;
  request.spread.gpu = sigma;
  const auto sampled = sample_steps(cluster, model, {plan}, {}, request, 0).front();
  const double n = 1024;
  const double p95 = compute * max_multiplier_quantile(sigma, 0.95, n) + allreduce;
  const double p50 = compute * max_multiplier_quantile(sigma, 0.50, n) + allreduce;
  RecordProperty("unsampled_step_s", fmt::format("{:.6f}", s1));
  RecordProperty("compute_s", fmt::format("{:.6f}", compute));
  RecordProperty("allreduce_s", fmt::format("{:.6f}", allreduce));
  RecordProperty("p95_closed_form_s", fmt::format("{:.6f}", p95));
  RecordProperty("p95_sampled_s", fmt::format("{:.6f}", sampled.summary.p95_s));
  RecordProperty("p50_closed_form_s", fmt::format("{:.6f}", p50));
  RecordProperty("p50_sampled_s", fmt::format("{:.6f}", sampled.summary.p50_s));
  EXPECT_NEAR(sampled.summary.p95_s / p95, 1.0, 0.02) << fmt::format("closed form {} s", p95);
  EXPECT_NEAR(sampled.summary.p50_s / p50, 1.0, 0.02) << fmt::format("closed form {} s", p50);
  // The sampled step is no point: its p50 is well above the unsampled step (the slowest of 1024 GPUs
  // is about exp(0.05 x 3.2) = 1.17 times slow), beyond the tolerance.
  EXPECT_GT(sampled.summary.p50_s, s1 * 1.05);
  // Every sampled step is the closed form of its own draws: max m C + A.
  for (std::size_t i = 0; i < 5; ++i) {
    const auto draws = variability::draw_speed_sample(cluster, request.spread, request.seed, i).gpu_time_multipliers;
    const double worst = *std::max_element(draws.begin(), draws.end());
    EXPECT_NEAR(sampled.step_s[i], worst * compute + allreduce, 1e-6 * s1) << i;
  }
}

/// 2 x 8 H100, a 2-stage pipeline with 8-way data parallelism: small and not symmetric in time.
struct SmallJob {
  topology::Cluster cluster = dgx_h100_nodes(2);
  model::Model model = model_yaml(
      "model:\n  layers:\n"
      "    - { name: block, repeat: 4, forward_time: \"2 ms\", backward_time: \"4 ms\", params: 4194304, "
      "output_bytes: 1048576 }\n");
  plan::Plan plan = plan_yaml(
      "parallelism: { pipeline: 2, data: 8 }\nbatch: { global: 64, micro: 1 }\nschedule: 1f1b\n", cluster, model);
};

// The same seed gives the same step times whatever the thread count; another seed, other draws.
TEST(StepDistribution, DeterministicForAnyThreadCount) {
  const SmallJob job;
  variability::SamplingRequest request;
  request.samples = 24;
  request.spread = {0.05, 0.05};
  request.seed = 11;
  const auto one = sample_steps(job.cluster, job.model, {job.plan, job.plan}, {}, request, 1);
  const auto four = sample_steps(job.cluster, job.model, {job.plan, job.plan}, {}, request, 4);
  EXPECT_EQ(one[0].step_s, four[0].step_s);
  EXPECT_EQ(one[0].step_s, one[1].step_s);  // every plan meets the same sampled clusters
  request.seed = 12;
  EXPECT_NE(sample_steps(job.cluster, job.model, {job.plan}, {}, request, 2)[0].step_s, one[0].step_s);
}

// No spread: every sampled step is the unsampled step.
TEST(StepDistribution, SpreadZeroGivesTheUnsampledStep) {
  const SmallJob job;
  const double step = engine::simulate(job.cluster, job.model, job.plan).report.step_time_s;
  variability::SamplingRequest request;
  request.samples = 5;
  const auto s = sample_steps(job.cluster, job.model, {job.plan}, {}, request, 2)[0].summary;
  EXPECT_EQ(s.p50_s, step);
  EXPECT_EQ(s.p95_s, step);
  EXPECT_EQ(s.p99_s, step);
  EXPECT_EQ(s.mean_s, step);
}

// A link spread alone: a two-stage pipeline of one microbatch on a PCIe box (no latency, so a transfer
// costs bytes / bandwidth). The step is the compute S plus two transfers of X each at full bandwidth
// (the activation forward, its gradient back), over the same route GPU 0 - switch - GPU 1, whose
// bottleneck is its slowest link: with per-link time multipliers m_l, step = S + 2 X max_{l on route} m_l.
// S and X come from the runs with every link at m = 1 and m = 2; each sampled step is then checked
// against its own draws.
TEST(StepDistribution, LinkSpreadSlowsTransfersByTheirRoutesSlowestLink) {
  const topology::Cluster box = engine::testing::pcie_box(2, "10 GB/s", "0 us");
  const model::Model model = engine::testing::timed_layers(2, "1 ms", "1 ms", "1 ms", 10'000'000);
  const plan::Plan plan = engine::testing::pipeline_plan(2, 1, "1f1b", box, model);
  const auto step_with_links_at = [&](double m) {
    topology::Cluster c = box;
    for (std::size_t i = 0; i < c.links().size(); ++i) {
      const topology::LinkId id{static_cast<std::uint32_t>(i)};
      c.set_link_rate(id, BytesPerSec::bytes_per_sec(c.link(id).bandwidth.in_bytes_per_sec() / m), c.link(id).latency);
    }
    return engine::simulate(c, model, plan).report.step_time_s;
  };
  const double s1 = step_with_links_at(1);
  const double transfers = step_with_links_at(2) - s1;  // 2 X
  const double compute = s1 - transfers;
  ASSERT_NEAR(transfers, 2 * 10e6 / 10e9, 1e-6);  // two 10 MB transfers at 10 GB/s: 2 ms
  const std::vector<topology::LinkId> route = topology::RouteFinder(box).route(box.gpus()[0], box.gpus()[1])->links;
  ASSERT_GE(route.size(), 2U);

  variability::SamplingRequest request;
  request.samples = 16;
  request.spread.link = 0.2;
  const auto sampled = sample_steps(box, model, {plan}, {}, request, 2)[0];
  for (std::size_t i = 0; i < sampled.step_s.size(); ++i) {
    const auto m = variability::draw_speed_sample(box, request.spread, request.seed, i).link_time_multipliers;
    double slowest = 0;
    for (const topology::LinkId l : route) slowest = std::max(slowest, m[l.value]);
    EXPECT_NEAR(sampled.step_s[i], compute + transfers * slowest, 1e-6 * s1) << i;
  }
  EXPECT_NE(sampled.summary.max_s, sampled.summary.min_s);
}

}  // namespace
}  // namespace mpsim::planner
