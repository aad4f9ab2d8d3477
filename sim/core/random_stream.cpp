#include "sim/core/random_stream.h"

#include <cmath>

#include <boost/math/distributions/normal.hpp>

namespace mpsim {

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

RandomStream::RandomStream(std::uint64_t seed, std::uint64_t sample, RandomStreamId stream)
    // Chained, not xored together: (seed 1, sample 2) and (seed 2, sample 1) must differ.
    : engine_(splitmix64(splitmix64(splitmix64(seed) ^ sample) ^ static_cast<std::uint64_t>(stream))) {}

double RandomStream::uniform() noexcept {
  constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;
  return (static_cast<double>(engine_() >> 11) + 0.5) * kTwoToMinus53;
}

double RandomStream::standard_normal() { return standard_normal_quantile(uniform()); }

double RandomStream::standard_exponential() noexcept { return -std::log(uniform()); }

double standard_normal_quantile(double p) {
  return boost::math::quantile(boost::math::normal_distribution<double>(0.0, 1.0), p);
}

}  // namespace mpsim
