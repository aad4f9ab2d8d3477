#pragma once
/// Uneven batch shares across data-parallel replicas (Cephalo's, HexiScale's): each replica on GPUs of
/// its own speed gets microbatches in proportion to that speed, so that no replica waits for the
/// slowest at the gradient sync.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace mpsim::planner {

/// The integer split of `total` microbatches over replicas whose microbatch takes `per_microbatch[i]`
/// (any positive unit) that minimises the slowest replica's n_i x t_i, each replica at least one.
/// The closed form n_i = total x (1 / t_i) / sum_j (1 / t_j) rounded by the min-max rule: every
/// microbatch after the first of each goes to the replica it leaves finishing first (the lower index on
/// a tie), which is optimal for costs linear in n_i. Equal times give an even split (the remainder to
/// the first replicas). Preconditions: total >= per_microbatch.size() >= 1, every time > 0.
/// O(total log replicas). Pure and deterministic.
[[nodiscard]] std::vector<int> min_max_shares(std::span<const std::int64_t> per_microbatch, int total);

/// The same split where replica i may run at most `caps[i]` microbatches (the largest share that fits
/// its GPUs' memory): each replica at least one and at most its cap, the split that minimises the
/// slowest replica's n_i x t_i under those bounds. The same rule: every microbatch after the first of
/// each goes to the replica, among those below their cap, it leaves finishing first (the lower index on
/// a tie); it picks the smallest of the finishing times k x t_i (2 <= k <= cap_i), so it is optimal.
/// Caps at or above the uncapped shares leave them as min_max_shares gives them. std::nullopt when no
/// split fits: a cap below one, or the caps summing to less than `total`. Preconditions:
/// caps.size() == per_microbatch.size() >= 1, every time > 0. O(total log replicas). Pure.
[[nodiscard]] std::optional<std::vector<int>> min_max_shares(std::span<const std::int64_t> per_microbatch,
                                                             std::span<const int> caps, int total);

/// The slowest replica's n_i x t_i.
[[nodiscard]] std::int64_t slowest_replica(std::span<const std::int64_t> per_microbatch, std::span<const int> shares);

}  // namespace mpsim::planner
