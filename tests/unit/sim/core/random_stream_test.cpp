// The portable random streams: a sample's draws depend on (seed, sample, stream) alone, the uniforms
// stay inside (0, 1), and the normal quantile matches published values of Φ⁻¹.
#include "sim/core/random_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mpsim {
namespace {

std::vector<double> draws(std::uint64_t seed, std::uint64_t sample, RandomStreamId stream, int n) {
  RandomStream random(seed, sample, stream);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(random.uniform());
  return out;
}

TEST(RandomStream, SameKeySameDrawsOtherKeyOtherDraws) {
  EXPECT_EQ(draws(7, 3, RandomStreamId::GpuSpeeds, 100), draws(7, 3, RandomStreamId::GpuSpeeds, 100));
  EXPECT_NE(draws(7, 3, RandomStreamId::GpuSpeeds, 100), draws(8, 3, RandomStreamId::GpuSpeeds, 100));
  EXPECT_NE(draws(7, 3, RandomStreamId::GpuSpeeds, 100), draws(7, 4, RandomStreamId::GpuSpeeds, 100));
  EXPECT_NE(draws(7, 3, RandomStreamId::GpuSpeeds, 100), draws(7, 3, RandomStreamId::LinkSpeeds, 100));
  // Seed and sample are chained, not combined symmetrically.
  EXPECT_NE(draws(1, 2, RandomStreamId::GpuSpeeds, 10), draws(2, 1, RandomStreamId::GpuSpeeds, 10));
}

// The engine's output is the standard's, not the library's: the 10000th output of a default-constructed
// std::mt19937_64 is 9981545732273789042 ([rand.predef]), and its seeding from one word is specified too.
TEST(RandomStream, TheEngineIsTheStandardsOwn) {
  std::mt19937_64 engine;
  engine.discard(9999);
  EXPECT_EQ(engine(), 9981545732273789042ULL);
}

// Uniforms on the open interval; with n = 100,000 draws their mean is 1/2 within 5 standard errors
// (the uniform's sd is 1/sqrt(12) = 0.2887, so 5 x 0.2887 / sqrt(1e5) = 0.0046), and the exponentials'
// mean is 1 within 5 x 1 / sqrt(1e5) = 0.016.
TEST(RandomStream, UniformAndExponentialMoments) {
  RandomStream random(0, 0, RandomStreamId::Failures);
  const int n = 100000;
  double sum_u = 0;
  double sum_e = 0;
  for (int i = 0; i < n; ++i) {
    const double u = random.uniform();
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum_u += u;
    sum_e += random.standard_exponential();
  }
  EXPECT_NEAR(sum_u / n, 0.5, 0.0046);
  EXPECT_NEAR(sum_e / n, 1.0, 0.016);
}

// Φ⁻¹ at the points every statistics table prints (Abramowitz and Stegun, table 26.5).
TEST(StandardNormalQuantile, PublishedValues) {
  EXPECT_NEAR(standard_normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(standard_normal_quantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(standard_normal_quantile(0.95), 1.644853626951473, 1e-12);
  EXPECT_NEAR(standard_normal_quantile(0.99), 2.326347874040841, 1e-12);
  EXPECT_NEAR(standard_normal_quantile(0.999), 3.090232306167814, 1e-12);
  EXPECT_NEAR(standard_normal_quantile(0.025), -1.959963984540054, 1e-12);
}

// Normals from the stream: mean 0 within 5 x 1/sqrt(n), variance 1 within 5 x sqrt(2/n).
TEST(RandomStream, NormalMoments) {
  RandomStream random(42, 0, RandomStreamId::GpuSpeeds);
  const int n = 100000;
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = random.standard_normal();
    sum += z;
    sum_sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(sum_sq / n - (sum / n) * (sum / n), 1.0, 5 * std::sqrt(2.0 / n));
}

}  // namespace
}  // namespace mpsim
