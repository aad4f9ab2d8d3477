#include "executor/net/init.h"

namespace mpsim::executor {
namespace {

std::uint64_t mix(std::uint64_t x) noexcept {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t hash4(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept {
  return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

}  // namespace

float seeded_uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept {
  const std::uint64_t bits = hash4(seed, a, b, c) >> 40;  // 24 random bits
  return static_cast<float>(static_cast<double>(bits) / static_cast<double>(1ull << 23) - 1.0);
}

std::vector<std::int32_t> sample_tokens(std::uint64_t seed, int step, std::int64_t sample, std::int64_t seq,
                                        std::int64_t vocab) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(seq + 1));
  for (std::int64_t p = 0; p <= seq; ++p) {
    const std::uint64_t h = hash4(seed ^ 0x5EED5EEDull, static_cast<std::uint64_t>(step), static_cast<std::uint64_t>(sample),
                                  static_cast<std::uint64_t>(p));
    tokens[static_cast<std::size_t>(p)] = static_cast<std::int32_t>(h % static_cast<std::uint64_t>(vocab));
  }
  return tokens;
}

}  // namespace mpsim::executor
