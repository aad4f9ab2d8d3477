#pragma once
/// A lower bound on a plan's simulated step time from its virtual stages' compute times alone.
///
/// Every op of rank r waits for a first forward to cross virtual stages 0..r-1 (fill), then the rank
/// computes m microbatches of each of its chunks one op at a time (busy), and the backward of the
/// microbatch it finishes last must still cross virtual stages r-1..0 (drain):
///   fused backward (GPipe, 1F1B, interleaved, SageMaker):
///     LB_r = sum_{vs<r} f_vs + m sum_{c} (f_{r,c} + b_{r,c}) + sum_{vs<r} b_vs
///   split backward (the zero-bubble family, which defers W): the drain carries I only, and W of that
///   microbatch on rank 0 follows its I:
///     LB_r = max(sum_{vs<r} f_vs + m (f_r + i_r + w_r),
///                sum_{vs<r} f_vs + m (f_r + i_r) + sum_{vs<r} i_vs + w_0)
///   LB = max_r LB_r.
/// A schedule with F&B pairs of its own runs some backwards fused and some split: each counts as the
/// cheaper of the two, and no W follows the drain. A bidirectional schedule runs half the microbatches
/// per chunk, with the nearer direction's fill and drain.
/// For uniform stages under 1F1B this is (m + p - 1)(f + b). Optionally each rank has a tail: a lower
/// bound on what it does after its last compute op (gradient reduction, optimizer step; sync_bound.h).
/// Then the term that ends on rank r's own last op gets tail_r, and the one that ends on rank 0's (the
/// drain) tail_0. Point-to-point transfers and contention only add to the simulated time, so
/// LB <= simulated step time (a property test checks it for every schedule kind). Monotone in every
/// stage time and tail, so lower bounds on them give a lower bound too.
#include <span>

#include "sim/core/units.h"
#include "sim/schedule/program.h"

namespace mpsim::planner {

/// Compute times of one virtual stage per microbatch (on one tensor rank).
struct StageTimes {
  TimeNs forward;
  TimeNs backward;          ///< fused
  TimeNs backward_input;    ///< split (zero-bubble) schedules
  TimeNs backward_weight;
};

/// `stages` has shape.stages * shape.chunks entries, by virtual stage (plan::virtual_stage_of); `tails` is empty or has shape.stages entries. O(stages * chunks).
[[nodiscard]] TimeNs step_time_lower_bound(const schedule::PipelineShape& shape, std::span<const StageTimes> stages,
                                           std::span<const TimeNs> tails = {});

}  // namespace mpsim::planner
