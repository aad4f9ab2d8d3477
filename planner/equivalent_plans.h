#pragma once
/// Plans the simulator cannot tell apart. Two ranks orders (placements) often give the same step:
/// with tensor parallelism filling each node, data- and pipeline-parallel groups cross the same
/// kind of links either way. A ranking that lists both shows one plan twice and, in `--explain`,
/// compares the winner with its twin. Equivalent here is exact: the plans differ only in their
/// placement and their simulated step time, peak memory and idle share are equal.
#include <string>
#include <vector>

#include "planner/search.h"

namespace mpsim::planner {

/// One plan and the placements that give it the same simulated step.
struct EquivalentPlans {
  Evaluated plan;                          ///< the first of them in the ranking
  std::vector<plan::Placement> placements;  ///< its own first, then the others in ranking order
};

/// Whether `a` and `b` differ only in placement and simulate to the same step, memory and idle share.
[[nodiscard]] bool equivalent(const Evaluated& a, const Evaluated& b);

/// `ranked` with equivalent plans merged into the first of them, order kept.
[[nodiscard]] std::vector<EquivalentPlans> merge_equivalent(const std::vector<Evaluated>& ranked);

/// "tp-pp-dp / tp-dp-pp": the placements of a merged row.
[[nodiscard]] std::string placements_text(const EquivalentPlans& plans);

}  // namespace mpsim::planner
