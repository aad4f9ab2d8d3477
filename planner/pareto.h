#pragma once
/// The speed/memory Pareto front: plans no other plan beats on both step time and peak memory.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mpsim::planner {

struct ParetoPoint {
  std::int64_t step_time_ns = 0;
  std::int64_t peak_memory = 0;  ///< bytes
  std::size_t id = 0;            ///< tie-break: of equal points the lowest id is kept
};

/// Positions in `points` of the front, by peak memory ascending (so step time descending): a point is
/// on it when no other point is at least as good on both axes and better on one, and no equal point
/// has a lower id. O(n log n).
[[nodiscard]] std::vector<std::size_t> pareto_front(std::span<const ParetoPoint> points);

}  // namespace mpsim::planner
