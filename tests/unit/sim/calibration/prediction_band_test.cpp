// The band drawn from past errors holds a further error of the same kind with the promised probability
// whatever their distribution: (n + 1 - 2k) / (n + 1) for the k-th smallest to the k-th largest of n.
#include "sim/calibration/prediction_band.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace mpsim::calibration {
namespace {

std::vector<double> one_to(int n) {
  std::vector<double> values;
  for (int i = n; i >= 1; --i) values.push_back(i);  // unsorted on purpose
  return values;
}

TEST(CoverageBand, IsTheKthSmallestToTheKthLargestWithKFromTheCount) {
  EXPECT_FALSE(coverage_band(one_to(8)).has_value());  // the smallest to the largest of 8 holds 7 / 9 < 80 %
  const auto nine = coverage_band(one_to(9));          // k = floor(10 / 10) = 1: holds 8 / 10
  ASSERT_TRUE(nine.has_value());
  EXPECT_EQ(nine->low, 1);
  EXPECT_EQ(nine->high, 9);
  const auto nineteen = coverage_band(one_to(19));  // k = 2: holds 16 / 20
  ASSERT_TRUE(nineteen.has_value());
  EXPECT_EQ(nineteen->low, 2);
  EXPECT_EQ(nineteen->high, 18);
  const auto twenty_nine = coverage_band(one_to(29));  // k = 3: holds 24 / 30
  ASSERT_TRUE(twenty_nine.has_value());
  EXPECT_EQ(twenty_nine->low, 3);
  EXPECT_EQ(twenty_nine->high, 27);
}

/// A uniform draw in [0, 1) from the engine's bits (std::mt19937_64's output is specified; the standard
/// distributions' are not).
double uniform(std::mt19937_64& engine) { return static_cast<double>(engine() >> 11) * 0x1.0p-53; }

// Errors drawn from a skewed distribution (exponential, as step-time errors are one-sided): the share of
// further draws inside the band drawn from n earlier ones is (n + 1 - 2k) / (n + 1) on average, at least
// kBandCoverage, for a small and a larger n. 40,000 trials: the share's standard error is about 0.002.
TEST(CoverageBand, HoldsItsShareOfFurtherErrorsWhateverTheirDistribution) {
  std::mt19937_64 engine(20261201);
  for (const int n : {9, 29}) {
    const int k = (n + 1) / 10;
    const double promised = static_cast<double>(n + 1 - 2 * k) / (n + 1);
    EXPECT_GE(promised, kBandCoverage);
    int inside = 0;
    constexpr int kTrials = 40000;
    for (int trial = 0; trial < kTrials; ++trial) {
      std::vector<double> errors;
      for (int i = 0; i < n; ++i) errors.push_back(-std::log(1 - uniform(engine)));
      const auto band = coverage_band(errors);
      ASSERT_TRUE(band.has_value());
      const double next = -std::log(1 - uniform(engine));
      inside += next >= band->low && next <= band->high ? 1 : 0;
    }
    EXPECT_NEAR(static_cast<double>(inside) / kTrials, promised, 0.01) << n << " errors";
  }
}

}  // namespace
}  // namespace mpsim::calibration
