#pragma once
/// Seeded values that do not depend on how the model is split: every parameter element and every
/// token is a pure function of (seed, where it is), so a single-rank run and a pipelined,
/// tensor- and data-parallel run start from the same weights and see the same global batch.
#include <cstdint>
#include <vector>

namespace mpsim::executor {

/// A uniform value in [-1, 1) from a counter-based hash (SplitMix64) of the four keys.
[[nodiscard]] float seeded_uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept;

/// Token ids of one sample: seq + 1 values in [0, vocab) for global sample `sample` of step `step`;
/// the first seq are the inputs and the last seq the labels (next-token prediction).
[[nodiscard]] std::vector<std::int32_t> sample_tokens(std::uint64_t seed, int step, std::int64_t sample,
                                                      std::int64_t seq, std::int64_t vocab);

}  // namespace mpsim::executor
