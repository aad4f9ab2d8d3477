#pragma once
/// The q-quantile of a sample by linear interpolation between its order statistics (Hyndman and Fan's
/// definition 7, the default of R and NumPy): the prediction bands' error percentiles and the sampled
/// steps' p50/p95/p99 both read a sample this way.
#include <vector>

namespace mpsim {

/// Precondition: `values` is not empty and 0 <= q <= 1.
[[nodiscard]] double linear_quantile(std::vector<double> values, double q);

}  // namespace mpsim
