#include "sim/trace/memory_timeline.h"

#include <algorithm>

namespace mpsim::trace {

void MemoryTimelineBuilder::set(std::int64_t time_ns, std::int64_t bytes) {
  if (open_ && time_ns == open_instant_.time_ns) {
    open_instant_.highest = std::max(open_instant_.highest, bytes);
    open_instant_.last = bytes;
    return;
  }
  if (open_) close(open_instant_, closed_);
  open_ = true;
  open_instant_ = {time_ns, bytes, bytes};
}

void MemoryTimelineBuilder::close(const Instant& instant, std::vector<MemoryPoint>& points) {
  // Divided, not multiplied by 1e-9: the nearest double to the decimal, which prints as the nanoseconds.
  const double time_s = static_cast<double>(instant.time_ns) / 1e9;
  const bool above_before = points.empty() || instant.highest > points.back().bytes;
  if (instant.highest > instant.last && above_before) points.push_back({time_s, instant.highest});
  if (points.empty() || points.back().bytes != instant.last) points.push_back({time_s, instant.last});
}

std::vector<MemoryPoint> MemoryTimelineBuilder::points() const {
  std::vector<MemoryPoint> out = closed_;
  if (open_) close(open_instant_, out);
  return out;
}

}  // namespace mpsim::trace
