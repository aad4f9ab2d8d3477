#include "planner/replica_shares.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

namespace mpsim::planner {

std::optional<std::vector<int>> min_max_shares(std::span<const std::int64_t> per_microbatch,
                                               std::span<const int> caps, int total) {
  if (std::any_of(caps.begin(), caps.end(), [](int cap) { return cap < 1; })) return std::nullopt;
  if (std::accumulate(caps.begin(), caps.end(), std::int64_t{0}) < total) return std::nullopt;
  std::vector<int> shares(per_microbatch.size(), 1);
  // (when the replica would finish with one more microbatch, its index): the smallest first.
  using Next = std::pair<std::int64_t, std::size_t>;
  std::priority_queue<Next, std::vector<Next>, std::greater<>> next;
  for (std::size_t i = 0; i < per_microbatch.size(); ++i) {
    if (caps[i] > 1) next.emplace(2 * per_microbatch[i], i);
  }
  // The caps sum to at least `total`, so a replica below its cap remains while any microbatch does.
  for (int given = static_cast<int>(per_microbatch.size()); given < total; ++given) {
    const auto [end, i] = next.top();
    next.pop();
    ++shares[i];
    if (shares[i] < caps[i]) next.emplace(end + per_microbatch[i], i);
  }
  return shares;
}

std::vector<int> min_max_shares(std::span<const std::int64_t> per_microbatch, int total) {
  // No replica can take more than the whole batch: caps of `total` never bind.
  const std::vector<int> no_caps(per_microbatch.size(), total);
  return *min_max_shares(per_microbatch, no_caps, total);
}

std::int64_t slowest_replica(std::span<const std::int64_t> per_microbatch, std::span<const int> shares) {
  std::int64_t worst = 0;
  for (std::size_t i = 0; i < per_microbatch.size() && i < shares.size(); ++i) {
    worst = std::max(worst, per_microbatch[i] * shares[i]);
  }
  return worst;
}

}  // namespace mpsim::planner
