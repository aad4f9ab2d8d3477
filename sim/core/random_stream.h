#pragma once
/// Portable random numbers for sampled what-ifs: the same (seed, sample, stream) gives the same draws
/// on every standard library and whatever thread draws them.
///
/// std::mt19937_64's output for a given seed is fixed by the C++ standard; the standard's distributions
/// (std::normal_distribution and the like) are not, so the draws here are made from its raw 64-bit
/// output by inverse CDFs: a uniform from the top 53 bits, a standard normal as Φ⁻¹ of it (Boost.Math's
/// normal quantile), an exponential as -ln of it.
#include <cstdint>
#include <random>

namespace mpsim {

/// The independent sequences one sample draws from.
enum class RandomStreamId : std::uint8_t { GpuSpeeds, LinkSpeeds, Failures };

/// SplitMix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a bijection of 64-bit words that spreads nearby inputs (seeds 0, 1, 2 ...) far apart.
[[nodiscard]] std::uint64_t splitmix64(std::uint64_t x) noexcept;

/// The generator of one (seed, sample index, stream): its state depends on nothing else, so sample i
/// draws the same numbers whether it runs first, last, or on another thread.
class RandomStream {
 public:
  RandomStream(std::uint64_t seed, std::uint64_t sample, RandomStreamId stream);

  /// Uniform on the open interval (0, 1): (k + 1/2) / 2^53 for the top 53 bits k of one output.
  [[nodiscard]] double uniform() noexcept;
  /// Standard normal, Φ⁻¹(uniform()).
  [[nodiscard]] double standard_normal();
  /// Exponential of mean 1, -ln(uniform()).
  [[nodiscard]] double standard_exponential() noexcept;

 private:
  std::mt19937_64 engine_;
};

/// Φ⁻¹(p), the standard normal quantile, for p in (0, 1) (Boost.Math; exact to double precision).
[[nodiscard]] double standard_normal_quantile(double p);

}  // namespace mpsim
