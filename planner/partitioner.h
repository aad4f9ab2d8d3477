#pragma once
/// Balanced partition of a sequence of layers into contiguous stages (DeepSpeed partition_balanced,
/// PipeDream): minimise the slowest stage.
#include <cstdint>
#include <span>
#include <vector>

namespace mpsim::planner {

/// Boundaries 0 = b_0 < b_1 < ... < b_parts = costs.size() that minimise the largest stage cost
/// max_s sum(costs[b_s .. b_{s+1})). Among the optimal partitions it returns the one whose boundaries
/// are lexicographically smallest (early stages as short as the optimum allows: they hold the most
/// in-flight activations in 1F1B-like schedules). Pure and deterministic.
///
/// Preconditions: 1 <= parts <= costs.size(), every cost >= 0. Dynamic programming over prefix sums,
/// O(parts * n^2) time and O(parts * n) memory for n = costs.size().
[[nodiscard]] std::vector<int> balanced_partition(std::span<const std::int64_t> costs, int parts);

/// Which of the optimal partitions: the early stages as short as the optimum allows (above), or the
/// slack the slowest stage leaves spread over the others (the least sum of squared stage costs among
/// the optimal ones; on a tie the smaller boundaries), so that no stage but the slowest sits at the
/// optimum only because the estimates said it may.
enum class OptimalTie : std::uint8_t { ShortFirst, Spread };

/// The same where each stage has its own cost of each unit (stages on GPUs of different speeds):
/// `stage_costs[s][u]` is unit u's cost on stage s, and the partition minimises
/// max_s sum(stage_costs[s][b_s .. b_{s+1})). One stage per row; rows of equal length >= the rows.
[[nodiscard]] std::vector<int> balanced_partition(std::span<const std::vector<std::int64_t>> stage_costs,
                                                  OptimalTie tie = OptimalTie::ShortFirst);

/// The largest stage cost of `boundaries` over `costs`.
[[nodiscard]] std::int64_t bottleneck(std::span<const std::int64_t> costs, std::span<const int> boundaries);

}  // namespace mpsim::planner
