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
  // A schedule with F&B pairs of its own runs some backwards fused and some split: count each as the
  // cheaper of the two, and no weight pass after the drain (its last backward may be fused).
  TimeNs best;
  const bool mixed = plan::traits(shape.kind).forward_backward_pairs;
  const auto at = [&](int vs) -> const StageTimes& { return stages[static_cast<std::size_t>(vs)]; };
  const auto tail = [&](int r) { return tails.empty() ? TimeNs{} : tails[static_cast<std::size_t>(r)]; };
  const auto whole_backward = [&](const StageTimes& s) {
    const TimeNs parts = s.backward_input + s.backward_weight;
    return mixed ? std::min(s.backward, parts) : split ? parts : s.backward;
  };
  const auto input_backward = [&](const StageTimes& s) {
    return mixed ? std::min(s.backward, s.backward_input) : s.backward_input;
  };
  const TimeNs last_weight = mixed ? TimeNs{} : at(0).backward_weight;
  // Rank r's compute per microbatch of every chunk: forwards, whole backwards, input gradients.
  struct Work {
    TimeNs forward, backward, input;
  };
  const auto work_of = [&](int r) {
    Work w;
    for (int c = 0; c < v; ++c) {
      const StageTimes& s = at(plan::virtual_stage_of(shape.kind, p, r, c));
      w.forward += s.forward;
      w.backward += whole_backward(s);
      w.input += input_backward(s);
    }
    return w;
  };
  if (plan::is_bidirectional(shape.kind)) {
    // Each chunk runs half the microbatches. A rank's first pass waits for the nearer direction's
    // forwards to reach it (the smaller fill), and the input gradient of its last backward still
    // crosses the stages upstream in its direction (the smaller drain).
    const auto sum = [&](int first, int last, auto time) {  // over virtual stages [first, last)
      TimeNs t;
      for (int vs = first; vs < last; ++vs) t += time(at(vs));
      return t;
    };
    const auto forward_of = [](const StageTimes& s) { return s.forward; };
    for (int r = 0; r < p; ++r) {
      const int far = plan::virtual_stage_of(shape.kind, p, r, 1);  // chunk 1: direction 1's stage
      const TimeNs fill = std::min(sum(0, r, forward_of), sum(p, far, forward_of));
      const TimeNs drain = std::min(sum(0, r, input_backward), sum(p, far, input_backward));
      const Work w = work_of(r);
      const std::int64_t half = m / 2;
      const TimeNs own = fill + (w.forward + w.backward) * half + tail(r);
      const TimeNs drained = fill + (w.forward + w.input) * half + drain;
      best = std::max({best, own, drained});
    }
    return best;
  }

  TimeNs fill, drain_fused, drain_input;  // over virtual stages 0..r-1
  for (int r = 0; r < p; ++r) {
    const Work w = work_of(r);
    const TimeNs own = fill + (w.forward + w.backward) * m + tail(r);
    const TimeNs drained = split ? TimeNs(fill + (w.forward + w.input) * m + drain_input + last_weight + tail(0))
                                 : TimeNs(fill + (w.forward + w.backward) * m + drain_fused + tail(0));
    const TimeNs bound = std::max(own, drained);
    best = std::max(best, bound);
    fill += at(r).forward;
    drain_fused += at(r).backward;
    drain_input += input_backward(at(r));
  }
  return best;
}

}  // namespace mpsim::planner
