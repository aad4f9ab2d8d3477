// The α–β fit of the profiler on synthetic points with known latency and bandwidth.
#include "executor/profile/alpha_beta.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace mpsim::executor::profile {
namespace {

std::vector<TransferSample> exact_points(double alpha, double beta) {
  std::vector<TransferSample> points;
  for (std::int64_t bytes = 4; bytes <= (64LL << 20); bytes *= 4) {
    points.push_back({bytes, alpha + static_cast<double>(bytes) / beta});
  }
  return points;
}

struct Link {
  double alpha;
  double beta;
};

class ExactFit : public ::testing::TestWithParam<Link> {};

TEST_P(ExactFit, RecoversAlphaAndBeta) {
  const auto [alpha, beta] = GetParam();
  const AlphaBeta fit = fit_alpha_beta(exact_points(alpha, beta));
  EXPECT_NEAR(fit.alpha_s, alpha, alpha * 1e-9);
  EXPECT_NEAR(fit.beta_bytes_per_s, beta, beta * 1e-9);
  EXPECT_LT(fit.max_relative_residual, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Links, ExactFit,
                         ::testing::Values(Link{1e-6, 10e9},      // shared memory
                                           Link{2e-6, 300e9},     // NVSwitch
                                           Link{5e-6, 25e9},      // InfiniBand
                                           Link{50e-6, 1.25e8},   // 1 Gb/s Ethernet
                                           Link{0.3e-6, 3.35e12}));

TEST(AlphaBetaFit, TwoPointsDetermineTheLine) {
  // 1 KiB in 2 us, 1 MiB in 1001 us: 1/beta = 999 us / (1 MiB - 1 KiB), alpha = 2 us - 1 KiB / beta.
  const std::vector<TransferSample> points = {{1024, 2e-6}, {1 << 20, 1001e-6}};
  const AlphaBeta fit = fit_alpha_beta(points);
  const double inverse_beta = 999e-6 / static_cast<double>((1 << 20) - 1024);
  EXPECT_NEAR(fit.beta_bytes_per_s, 1 / inverse_beta, 1e-6 / inverse_beta);
  EXPECT_NEAR(fit.alpha_s, 2e-6 - 1024 * inverse_beta, 1e-12);
}

TEST(AlphaBetaFit, RelativeWeightingKeepsTheLatencyUnderNoiseOnLargeMessages) {
  // +-5% noise, alternating, on every point: an unweighted fit would let the 64 MiB point's
  // milliseconds of noise swamp a microsecond latency; relative weights keep alpha within ~5%.
  const double alpha = 3e-6;
  const double beta = 8e9;
  std::vector<TransferSample> points = exact_points(alpha, beta);
  for (std::size_t i = 0; i < points.size(); ++i) points[i].seconds *= (i % 2 == 0) ? 1.05 : 0.95;
  const AlphaBeta fit = fit_alpha_beta(points);
  EXPECT_NEAR(fit.alpha_s, alpha, 0.06 * alpha);
  EXPECT_NEAR(fit.beta_bytes_per_s, beta, 0.06 * beta);
  EXPECT_NEAR(fit.max_relative_residual, 0.05, 0.02);
}

TEST(AlphaBetaFit, NegativeLatencyIsClampedAndBandwidthRefitted) {
  // Pure bandwidth with the small messages measured slightly fast: the free fit's alpha < 0.
  const double beta = 5e9;
  std::vector<TransferSample> points;
  for (std::int64_t bytes = 1024; bytes <= (16LL << 20); bytes *= 4) points.push_back({bytes, bytes / beta});
  points.front().seconds *= 0.8;
  const AlphaBeta fit = fit_alpha_beta(points);
  EXPECT_EQ(fit.alpha_s, 0);
  EXPECT_GT(fit.beta_bytes_per_s, beta);        // the fast point pulls it up a little
  EXPECT_LT(fit.beta_bytes_per_s, 1.1 * beta);
}

TEST(AlphaBetaFit, RefusesWhatCannotBeFitted) {
  EXPECT_THROW(static_cast<void>(fit_alpha_beta(std::vector<TransferSample>{})), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(fit_alpha_beta(std::vector<TransferSample>{{4, 1e-6}})), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(fit_alpha_beta(std::vector<TransferSample>{{4, 1e-6}, {4, 2e-6}})),
               std::invalid_argument);  // one size only
  EXPECT_THROW(static_cast<void>(fit_alpha_beta(std::vector<TransferSample>{{4, 0}, {8, 1e-6}})),
               std::invalid_argument);  // a zero time
  EXPECT_THROW(static_cast<void>(fit_alpha_beta(std::vector<TransferSample>{{4, 2e-6}, {1 << 20, 1e-6}})),
               std::invalid_argument);  // slower for less data: no positive bandwidth
}

}  // namespace
}  // namespace mpsim::executor::profile
