#pragma once
/// The step time of N sampled steps, summarised: the report's `step_time_quantiles_s` and
/// `step_time_mean_s` (docs/stragglers.md).
#include <vector>

namespace mpsim::variability {

struct StepDistributionSummary {
  int samples = 0;
  double mean_s = 0;  ///< what a long run's steps average: the training estimate's step under sampling
  double p50_s = 0;
  double p95_s = 0;
  double p99_s = 0;
  double min_s = 0;
  double max_s = 0;
};

/// The q-quantile of `values` (0 <= q <= 1), interpolated linearly between order statistics: with the
/// values sorted x_0 <= ... <= x_{n-1}, h = (n - 1) q, it is x_⌊h⌋ + (h - ⌊h⌋)(x_⌊h⌋+1 - x_⌊h⌋)
/// (Hyndman and Fan's definition 7, the default of R and NumPy). Precondition: `values` not empty.
[[nodiscard]] double sample_quantile(std::vector<double> values, double q);

/// Mean, p50, p95, p99, min and max of the sampled step times. Precondition: not empty.
[[nodiscard]] StepDistributionSummary summarize_steps(const std::vector<double>& step_s);

}  // namespace mpsim::variability
