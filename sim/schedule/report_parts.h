#pragma once
/// The parts of a step's report that the simulator and the executor build the same way: a device's
/// lane names, the plan summary, and idle / bubble figures from busy times. Header-only, as the trace
/// types are.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/plan/plan.h"
#include "sim/trace/report.h"

namespace mpsim::schedule {

/// The threads of a device's five lanes (under the process "node<i>"), in this order: compute, send,
/// receive wait, collectives (gradient stream), layer comm (in-layer collectives such as tensor-parallel
/// all-reduces). `local_name` is the device name without its node ("gpu3").
[[nodiscard]] inline std::array<std::string, 5> device_lane_threads(std::string_view local_name) {
  const std::string local(local_name);
  return {local + " compute", local + " send", local + " recv wait", local + " collectives", local + " layer comm"};
}

/// A device's idle time and bubble fraction from the step time and its busy time (busy_s set).
inline void set_idle(trace::DeviceReport& d, double step_s) noexcept {
  d.idle_s = std::max(0.0, step_s - d.busy_s);
  d.bubble_fraction = step_s > 0 ? d.idle_s / step_s : 0;
}

/// The idle share of all devices' time in the step.
[[nodiscard]] inline double idle_share(const std::vector<trace::DeviceReport>& devices, double step_s) noexcept {
  double idle = 0;
  for (const auto& d : devices) idle += d.idle_s;
  return step_s > 0 && !devices.empty() ? idle / (step_s * static_cast<double>(devices.size())) : 0;
}

/// The share of all devices' step time their compute streams waited on in-layer collectives.
[[nodiscard]] inline double communication_wait_share(const std::vector<trace::DeviceReport>& devices,
                                                     double step_s) noexcept {
  double waits = 0;
  for (const auto& d : devices) waits += d.communication_wait_s;
  return step_s > 0 && !devices.empty() ? waits / (step_s * static_cast<double>(devices.size())) : 0;
}

/// Zero Bubble's bubble rate: 1 - busy / (ranks x the longest rank's span), pipeline passes only.
[[nodiscard]] inline double zero_bubble_rate(std::int64_t longest_span_ns, double pipeline_busy_ns, int ranks) noexcept {
  return longest_span_ns > 0 ? 1.0 - pipeline_busy_ns / (static_cast<double>(longest_span_ns) * ranks) : 0;
}

}  // namespace mpsim::schedule
