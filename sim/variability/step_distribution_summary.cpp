#include "sim/variability/step_distribution_summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "sim/core/quantile.h"

namespace mpsim::variability {

double sample_quantile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("sample_quantile of no values");
  return linear_quantile(std::move(values), q);
}

StepDistributionSummary summarize_steps(const std::vector<double>& step_s) {
  if (step_s.empty()) throw std::invalid_argument("summarize_steps of no steps");
  StepDistributionSummary s;
  s.samples = static_cast<int>(step_s.size());
  // Summed in sample order, as offsets from the first step: equal steps average to themselves exactly
  // (spread zero gives the unsampled step), and the offsets keep more digits than the sums would.
  const double first = step_s.front();
  const double offsets = std::accumulate(step_s.begin(), step_s.end(), 0.0,
                                         [first](double sum, double x) { return sum + (x - first); });
  s.mean_s = first + offsets / static_cast<double>(step_s.size());
  s.p50_s = sample_quantile(step_s, 0.50);
  s.p95_s = sample_quantile(step_s, 0.95);
  s.p99_s = sample_quantile(step_s, 0.99);
  const auto [lo, hi] = std::minmax_element(step_s.begin(), step_s.end());
  s.min_s = *lo;
  s.max_s = *hi;
  return s;
}

}  // namespace mpsim::variability
