#include "planner/partitioner.h"

#include <algorithm>
#include <limits>

namespace mpsim::planner {

std::vector<int> balanced_partition(std::span<const std::int64_t> costs, int parts) {
  const int n = static_cast<int>(costs.size());
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::int64_t> prefix(un + 1, 0);
  for (std::size_t i = 0; i < un; ++i) prefix[i + 1] = prefix[i] + costs[i];
  const auto sum = [&](int a, int b) { return prefix[static_cast<std::size_t>(b)] - prefix[static_cast<std::size_t>(a)]; };

  // tail[j][i]: the smallest bottleneck of units i..n-1 cut into j stages (infinite when impossible).
  // Solved from the back so that the boundaries can then be chosen from the front.
  constexpr std::int64_t kInf = std::numeric_limits<std::int64_t>::max();
  const auto row = un + 1;
  std::vector<std::int64_t> tail((static_cast<std::size_t>(parts) + 1) * row, kInf);
  const auto at = [&](int j, int i) -> std::int64_t& { return tail[static_cast<std::size_t>(j) * row + static_cast<std::size_t>(i)]; };
  at(0, n) = 0;
  for (int j = 1; j <= parts; ++j) {
    // Stage j-from-the-end starts at i and ends at e; the j - 1 stages after it need n - e >= j - 1 units.
    for (int i = n - j; i >= 0; --i) {
      std::int64_t best = kInf;
      for (int e = i + 1; e <= n - (j - 1); ++e) {
        const std::int64_t rest = at(j - 1, e);
        if (rest == kInf) continue;
        best = std::min(best, std::max(sum(i, e), rest));
      }
      at(j, i) = best;
    }
  }
  const std::int64_t optimum = at(parts, 0);

  // Each stage as short as possible while the optimum stays reachable: the lexicographically
  // smallest optimal boundaries.
  std::vector<int> bounds{0};
  int start = 0;
  for (int j = parts; j >= 1; --j) {
    int end = start + 1;
    while (end <= n - (j - 1)) {
      const std::int64_t rest = at(j - 1, end);
      if (rest != kInf && std::max(sum(start, end), rest) <= optimum) break;
      ++end;
    }
    bounds.push_back(end);
    start = end;
  }
  return bounds;
}

std::int64_t bottleneck(std::span<const std::int64_t> costs, std::span<const int> boundaries) {
  std::int64_t worst = 0;
  for (std::size_t s = 0; s + 1 < boundaries.size(); ++s) {
    std::int64_t stage = 0;
    for (int i = boundaries[s]; i < boundaries[s + 1]; ++i) stage += costs[static_cast<std::size_t>(i)];
    worst = std::max(worst, stage);
  }
  return worst;
}

}  // namespace mpsim::planner
