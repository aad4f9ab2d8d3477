// Quantiles by Hyndman and Fan's definition 7 (R's and NumPy's default), worked by hand.
#include "sim/variability/step_distribution_summary.h"

#include <gtest/gtest.h>

namespace mpsim::variability {
namespace {

TEST(SampleQuantile, LinearBetweenOrderStatistics) {
  // Sorted 1, 2, 3, 4, 5 (given shuffled): h = 4q. q = 0.5 -> x_2 = 3; q = 0.95 -> h = 3.8, 4 + 0.8 x 1
  // = 4.8; q = 0.99 -> h = 3.96, 4.96; q = 0.1 -> h = 0.4, 1.4.
  const std::vector<double> v{4, 1, 5, 3, 2};
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.95), 4.8);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.99), 4.96);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.1), 1.4);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(sample_quantile(v, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(sample_quantile({7}, 0.95), 7.0);
  EXPECT_THROW((void)sample_quantile({}, 0.5), std::invalid_argument);
}

TEST(SummarizeSteps, MeanQuantilesAndRange) {
  // 1..100: mean 50.5; h = 99 q: p50 = 50.5, p95 = 95.05, p99 = 99.01.
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const StepDistributionSummary s = summarize_steps(v);
  EXPECT_EQ(s.samples, 100);
  EXPECT_DOUBLE_EQ(s.mean_s, 50.5);
  EXPECT_DOUBLE_EQ(s.p50_s, 50.5);
  EXPECT_NEAR(s.p95_s, 95.05, 1e-12);
  EXPECT_NEAR(s.p99_s, 99.01, 1e-12);
  EXPECT_EQ(s.min_s, 1.0);
  EXPECT_EQ(s.max_s, 100.0);
}

}  // namespace
}  // namespace mpsim::variability
