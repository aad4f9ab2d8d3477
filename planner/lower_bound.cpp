#include "planner/lower_bound.h"

#include <algorithm>

#include "sim/schedule/generators.h"

namespace mpsim::planner {

TimeNs step_time_lower_bound(const schedule::PipelineShape& shape, std::span<const StageTimes> stages,
                             std::span<const TimeNs> tails) {
  const int p = shape.stages;
  const int v = shape.chunks;
  const std::int64_t m = shape.microbatches;
  const bool split = schedule::splits_backward(shape.kind);
  const auto at = [&](int vs) -> const StageTimes& { return stages[static_cast<std::size_t>(vs)]; };
  const auto tail = [&](int r) { return tails.empty() ? TimeNs{} : tails[static_cast<std::size_t>(r)]; };

  TimeNs best;
  TimeNs fill, drain_fused, drain_input;  // over virtual stages 0..r-1
  for (int r = 0; r < p; ++r) {
    TimeNs forward, backward, input;
    for (int c = 0; c < v; ++c) {
      const StageTimes& s = at(c * p + r);
      forward += s.forward;
      backward += split ? TimeNs(s.backward_input + s.backward_weight) : s.backward;
      input += s.backward_input;
    }
    const TimeNs own = fill + (forward + backward) * m + tail(r);
    const TimeNs drained = split ? TimeNs(fill + (forward + input) * m + drain_input + at(0).backward_weight + tail(0))
                                 : TimeNs(fill + (forward + backward) * m + drain_fused + tail(0));
    const TimeNs bound = std::max(own, drained);
    best = std::max(best, bound);
    fill += at(r).forward;
    drain_fused += at(r).backward;
    drain_input += at(r).backward_input;
  }
  return best;
}

}  // namespace mpsim::planner
