#include "planner/partitioner.h"

#include <algorithm>
#include <limits>

namespace mpsim::planner {
namespace {

/// Of the partitions whose every stage costs at most `optimum`, the one with the least sum of squared
/// stage costs (the smaller boundaries on a tie). Dynamic programming like the bottleneck's, from the back.
std::vector<int> spread_partition(std::span<const std::vector<std::int64_t>> stage_costs, std::int64_t optimum) {
  const int parts = static_cast<int>(stage_costs.size());
  const int n = static_cast<int>(stage_costs.front().size());
  const auto row = static_cast<std::size_t>(n) + 1;
  std::vector<std::vector<std::int64_t>> prefix(stage_costs.size(), std::vector<std::int64_t>(row, 0));
  for (std::size_t s = 0; s < stage_costs.size(); ++s) {
    for (std::size_t u = 0; u + 1 < row; ++u) prefix[s][u + 1] = prefix[s][u] + stage_costs[s][u];
  }
  const auto cost = [&](int stage, int a, int b) {
    const auto& p = prefix[static_cast<std::size_t>(stage)];
    return p[static_cast<std::size_t>(b)] - p[static_cast<std::size_t>(a)];
  };
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // squares[s * row + i]: the least sum of squares of units i..n-1 cut into stages s..parts-1 within the optimum.
  std::vector<double> squares((static_cast<std::size_t>(parts) + 1) * row, kInf);
  std::vector<int> next((static_cast<std::size_t>(parts) + 1) * row, -1);
  const auto at = [&](int s, int i) -> std::size_t { return static_cast<std::size_t>(s) * row + static_cast<std::size_t>(i); };
  squares[at(parts, n)] = 0;
  for (int s = parts - 1; s >= 0; --s) {
    for (int i = n - (parts - s); i >= 0; --i) {
      for (int e = i + 1; e <= n - (parts - s - 1); ++e) {
        const std::int64_t c = cost(s, i, e);
        if (c > optimum) break;  // costs are >= 0: a longer stage costs no less
        const double rest = squares[at(s + 1, e)];
        if (rest == kInf) continue;
        const double total = static_cast<double>(c) * static_cast<double>(c) + rest;
        if (total < squares[at(s, i)]) {
          squares[at(s, i)] = total;
          next[at(s, i)] = e;
        }
      }
    }
  }
  std::vector<int> bounds{0};
  for (int s = 0; s < parts; ++s) bounds.push_back(next[at(s, bounds.back())]);
  return bounds;
}

}  // namespace

std::vector<int> balanced_partition(std::span<const std::int64_t> costs, int parts) {
  return balanced_partition(std::vector<std::vector<std::int64_t>>(static_cast<std::size_t>(parts),
                                                                   std::vector<std::int64_t>(costs.begin(), costs.end())));
}

std::vector<int> balanced_partition(std::span<const std::vector<std::int64_t>> stage_costs, OptimalTie tie) {
  const int parts = static_cast<int>(stage_costs.size());
  const int n = static_cast<int>(stage_costs.front().size());
  const auto un = static_cast<std::size_t>(n);
  // prefix[s][i]: the first i units' cost on stage s.
  std::vector<std::vector<std::int64_t>> prefix(stage_costs.size(), std::vector<std::int64_t>(un + 1, 0));
  for (std::size_t s = 0; s < stage_costs.size(); ++s) {
    for (std::size_t i = 0; i < un; ++i) prefix[s][i + 1] = prefix[s][i] + stage_costs[s][i];
  }
  // The cost of units a..b-1 as the stage j-from-the-end (stage parts - j from the front).
  const auto sum = [&](int j, int a, int b) {
    const auto& p = prefix[static_cast<std::size_t>(parts - j)];
    return p[static_cast<std::size_t>(b)] - p[static_cast<std::size_t>(a)];
  };

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
        best = std::min(best, std::max(sum(j, i, e), rest));
      }
      at(j, i) = best;
    }
  }
  const std::int64_t optimum = at(parts, 0);
  if (tie == OptimalTie::Spread) return spread_partition(stage_costs, optimum);

  // Each stage as short as possible while the optimum stays reachable: the lexicographically
  // smallest optimal boundaries.
  std::vector<int> bounds{0};
  int start = 0;
  for (int j = parts; j >= 1; --j) {
    int end = start + 1;
    while (end <= n - (j - 1)) {
      const std::int64_t rest = at(j - 1, end);
      if (rest != kInf && std::max(sum(j, start, end), rest) <= optimum) break;
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
