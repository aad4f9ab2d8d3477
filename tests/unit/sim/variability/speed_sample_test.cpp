// Sampled speeds: lognormal multipliers of median 1 whose logs have the spread as standard deviation,
// drawn from (seed, sample) alone, applied on top of a cluster's own what-ifs.
#include "sim/variability/speed_sample.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "sim/core/yaml_field.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::variability {
namespace {

/// `nodes` x 8 GPUs on NVSwitch, InfiniBand between nodes.
topology::Cluster cluster(int nodes) {
  return topology::build_cluster(topology::load_topology_spec(
      YamlDocument::parse(fmt::format("cluster:\n  nodes: {}\n  gpus_per_node: 8\n  gpu: h100-sxm\n"
                                      "  intra_node: {{ kind: nvswitch, bandwidth: \"450 GB/s\", latency: \"1 us\" }}\n"
                                      "  inter_node: {{ kind: infiniband, bandwidth: \"400 Gb/s\", latency: \"5 us\", "
                                      "nics_per_node: 8 }}\n",
                                      nodes),
                          "cluster.yaml")
          .root()));
}

TEST(SpeedSample, OneMultiplierPerGpuAndLinkAllOneWithoutSpread) {
  const auto c = cluster(2);
  const SpeedSample none = draw_speed_sample(c, {}, 0, 0);
  ASSERT_EQ(none.gpu_time_multipliers.size(), c.gpus().size());
  ASSERT_EQ(none.link_time_multipliers.size(), c.links().size());
  for (const double m : none.gpu_time_multipliers) EXPECT_EQ(m, 1.0);
  for (const double m : none.link_time_multipliers) EXPECT_EQ(m, 1.0);
  // A GPU spread alone leaves the links at 1, and the GPUs' draws do not depend on the link spread.
  const SpeedSample gpus = draw_speed_sample(c, {0.1, 0}, 3, 5);
  const SpeedSample both = draw_speed_sample(c, {0.1, 0.2}, 3, 5);
  EXPECT_EQ(gpus.gpu_time_multipliers, both.gpu_time_multipliers);
  for (const double m : gpus.link_time_multipliers) EXPECT_EQ(m, 1.0);
  EXPECT_NE(both.link_time_multipliers, gpus.link_time_multipliers);
}

TEST(SpeedSample, DrawsDependOnSeedAndSampleAlone) {
  const auto c = cluster(2);
  EXPECT_EQ(draw_speed_sample(c, {0.05, 0.05}, 9, 4).gpu_time_multipliers,
            draw_speed_sample(c, {0.05, 0.05}, 9, 4).gpu_time_multipliers);
  EXPECT_NE(draw_speed_sample(c, {0.05, 0}, 9, 4).gpu_time_multipliers,
            draw_speed_sample(c, {0.05, 0}, 9, 5).gpu_time_multipliers);
  EXPECT_NE(draw_speed_sample(c, {0.05, 0}, 9, 4).gpu_time_multipliers,
            draw_speed_sample(c, {0.05, 0}, 10, 4).gpu_time_multipliers);
}

// ln m is normal with mean 0 and standard deviation σ: over 64 GPUs x 200 samples (n = 12,800) the
// logs' mean is 0 within 5 σ / sqrt(n) and their sd is σ within 5 σ / sqrt(2n); the median of m is 1
// within the same 5 standard errors of a median (sqrt(pi/2) σ / sqrt(n) for ln m).
TEST(SpeedSample, LognormalOfMedianOneWithTheSpreadAsLogSd) {
  const auto c = cluster(8);
  const double sigma = 0.1;
  std::vector<double> logs;
  for (std::uint64_t s = 0; s < 200; ++s) {
    for (const double m : draw_speed_sample(c, {sigma, 0}, 1, s).gpu_time_multipliers) {
      ASSERT_GT(m, 0.0);
      logs.push_back(std::log(m));
    }
  }
  const double n = static_cast<double>(logs.size());
  const double mean = std::accumulate(logs.begin(), logs.end(), 0.0) / n;
  double sq = 0;
  for (const double x : logs) sq += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 0.0, 5 * sigma / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(sq / (n - 1)), sigma, 5 * sigma / std::sqrt(2 * n));
  std::nth_element(logs.begin(), logs.begin() + static_cast<long>(logs.size() / 2), logs.end());
  EXPECT_NEAR(logs[logs.size() / 2], 0.0, 5 * std::sqrt(std::acos(-1.0) / 2) * sigma / std::sqrt(n));
}

TEST(SpeedSample, AppliedOnTopOfTheClustersOwnWhatIfs) {
  auto c = cluster(2);
  const topology::DeviceId slow = c.gpus()[3];
  c.set_slowdown(slow, 1.25);
  const SpeedSample sample = draw_speed_sample(c, {0.1, 0.1}, 2, 0);
  const topology::Cluster sampled = with_speed_sample(c, sample);
  for (std::size_t i = 0; i < c.gpus().size(); ++i) {
    const double base = i == 3 ? 1.25 : 1.0;
    EXPECT_DOUBLE_EQ(sampled.device(c.gpus()[i]).slowdown, base * sample.gpu_time_multipliers[i]);
  }
  for (std::size_t i = 0; i < c.links().size(); ++i) {
    EXPECT_DOUBLE_EQ(sampled.links()[i].bandwidth.in_bytes_per_sec(),
                     c.links()[i].bandwidth.in_bytes_per_sec() / sample.link_time_multipliers[i]);
    EXPECT_EQ(sampled.links()[i].latency, c.links()[i].latency);
  }
  EXPECT_THROW((void)with_speed_sample(cluster(1), sample), std::invalid_argument);
}

// One copy serves sample after sample: applying a second sample over the first gives what the second
// gives on a fresh copy, nothing of the first left (all-1 multipliers included).
TEST(SpeedSample, ApplyingInPlaceLeavesNothingOfTheLastSample) {
  auto base = cluster(2);
  base.set_slowdown(base.gpus()[1], 1.5);
  topology::Cluster reused = base;
  apply_speed_sample(reused, base, draw_speed_sample(base, {0.2, 0.2}, 4, 0));
  for (const SpeedSpread& next : {SpeedSpread{0.1, 0.1}, SpeedSpread{}}) {
    const SpeedSample sample = draw_speed_sample(base, next, 4, 1);
    apply_speed_sample(reused, base, sample);
    const topology::Cluster fresh = with_speed_sample(base, sample);
    for (const topology::DeviceId gpu : base.gpus()) EXPECT_EQ(reused.device(gpu).slowdown, fresh.device(gpu).slowdown);
    for (std::size_t i = 0; i < base.links().size(); ++i) {
      EXPECT_EQ(reused.links()[i].bandwidth, fresh.links()[i].bandwidth);
    }
  }
  EXPECT_EQ(reused.device(base.gpus()[1]).slowdown, 1.5);  // the last sample had no spread
}

}  // namespace
}  // namespace mpsim::variability
