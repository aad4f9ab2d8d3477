#pragma once
/// Plans a ranking should not list twice. Two rank orders (placements) often give nearly the same
/// step: with tensor parallelism filling each node, data- and pipeline-parallel groups cross the same
/// kind of links either way, and only which switches a ring passes differs (GPT-3 175B on 1024 A100:
/// 17.36453 s under tp-pp-dp, 17.36464 s under tp-dp-pp). A ranking that lists both shows one plan
/// twice and, in `--explain`, compares the winner with its twin. Equivalent here: the plans differ
/// only in their placement (or, with one pipeline stage, where every pipeline schedule runs the same
/// forward-backward loop, in the schedule's name and its chunks), need the same peak memory, and their
/// simulated step times are within kEquivalentStepShare of each other.
#include <string>
#include <vector>

#include "planner/search.h"

namespace mpsim::planner {

/// Step times closer than this share are one answer: a hundredth of the simulator's median error on
/// published runs (docs/validation.md: 5-10 % for dense models), and well below what a placement that
/// matters changes (a data-parallel ring over a slower rail moves the step by percents).
inline constexpr double kEquivalentStepShare = 1e-3;

/// One plan and the placements (and, with one pipeline stage, the schedule names) that give it the same
/// simulated step.
struct EquivalentPlans {
  Evaluated plan;                           ///< the first of them in the ranking
  std::vector<plan::Placement> placements;  ///< its own first, then the others in ranking order, each once
  std::vector<plan::ScheduleKind> schedules;  ///< the same for the schedule's names
};

/// Whether `a` and `b` differ only in placement (with one pipeline stage, also in schedule), with the
/// same peak memory and step times within kEquivalentStepShare.
[[nodiscard]] bool equivalent(const Evaluated& a, const Evaluated& b);

/// `ranked` with equivalent plans merged into the first of them, order kept.
[[nodiscard]] std::vector<EquivalentPlans> merge_equivalent(const std::vector<Evaluated>& ranked);

/// "tp-pp-dp / tp-dp-pp": the placements of a merged row.
[[nodiscard]] std::string placements_text(const EquivalentPlans& plans);
/// "1f1b / zb-h1": the schedule names of a merged row.
[[nodiscard]] std::string schedules_text(const EquivalentPlans& plans);

}  // namespace mpsim::planner
