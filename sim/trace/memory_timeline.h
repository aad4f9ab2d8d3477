#pragma once
/// A device's memory through the step as a compact step function (DeviceReport::memory_timeline),
/// built from its values as they change.
#include <cstdint>
#include <vector>

#include "sim/trace/report.h"

namespace mpsim::trace {

/// Takes a device's memory at each change, in time order, and keeps the change points: a value equal
/// to the one before adds nothing. Several values at one instant (an F&B pair stashes its forward
/// before its backward frees another's) leave the instant's last value, preceded by the instant's
/// highest when that is above both the value before the instant and the last one, so that the
/// timeline's largest value is the device's peak.
class MemoryTimelineBuilder {
 public:
  void set(std::int64_t time_ns, std::int64_t bytes);
  /// The change points of the values set so far.
  [[nodiscard]] std::vector<MemoryPoint> points() const;

 private:
  struct Instant {
    std::int64_t time_ns = 0;
    std::int64_t highest = 0;
    std::int64_t last = 0;
  };
  /// Appends the change points `instant` adds to `points`.
  static void close(const Instant& instant, std::vector<MemoryPoint>& points);

  std::vector<MemoryPoint> closed_;
  bool open_ = false;  ///< values at open_instant_ wait to be reduced: a later one may share its time
  Instant open_instant_;
};

}  // namespace mpsim::trace
