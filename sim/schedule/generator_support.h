#pragma once
/// Pieces the generators share (not part of the public interface).
#include <vector>

#include "sim/schedule/program.h"

namespace mpsim::schedule::detail {

/// A Program of `shape` with `kind` set and one empty stream per rank.
/// Throws std::invalid_argument with shape_error()'s message when the shape is not valid for `kind`.
[[nodiscard]] Program empty_program(const PipelineShape& shape, plan::ScheduleKind kind);

/// One step of the 1F1B order: a forward or a backward of `microbatch`.
struct Step {
  bool forward = true;
  int microbatch = 0;
};

/// The 1F1B order of `rank` (warm-up min(p - rank - 1, m), steady "F B", cool-down), shared by
/// make_1f1b and make_zb_h1. O(m).
[[nodiscard]] std::vector<Step> one_f_one_b_steps(int stages, int microbatches, int rank);

}  // namespace mpsim::schedule::detail
