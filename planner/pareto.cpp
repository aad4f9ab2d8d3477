#include "planner/pareto.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <tuple>

namespace mpsim::planner {

std::vector<std::size_t> pareto_front(std::span<const ParetoPoint> points) {
  std::vector<std::size_t> order(points.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const ParetoPoint& x = points[a];
    const ParetoPoint& y = points[b];
    return std::tie(x.peak_memory, x.step_time_ns, x.id) < std::tie(y.peak_memory, y.step_time_ns, y.id);
  });
  // Sweep by memory: a point joins when it is strictly faster than everything using no more memory.
  std::vector<std::size_t> front;
  std::int64_t fastest = std::numeric_limits<std::int64_t>::max();
  for (const std::size_t i : order) {
    if (points[i].step_time_ns < fastest) {
      front.push_back(i);
      fastest = points[i].step_time_ns;
    }
  }
  return front;
}

}  // namespace mpsim::planner
